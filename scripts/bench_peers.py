#!/usr/bin/env python3
"""The peers' side of scripts/bench: the same work in NumPy, PyTorch and JAX (CPU), timed the same
way. Prints one JSON object {row: {peer: value}} plus "_versions" (peer: version), "_source" and
"_failed" (what could not run, and why); a missing peer's cells are simply absent ("n/a").

Each peer runs in its own process (`bench_peers.py SECTION`), so that one library's threads and
memory do not weigh on another's figures and a failing peer costs only its own rows. The compile
times run in fresh processes sharing one new cache directory: cold first, then warm from the
persistent caches a process before had filled (see section_compile)."""
import json, os, subprocess, sys, tempfile, time

os.environ.setdefault("JAX_PLATFORMS", "cpu")

def best_of(f, reps, inner):
    f()
    best = float("inf")
    for _ in range(reps):
        t0 = time.perf_counter()
        for _ in range(inner):
            f()
        best = min(best, (time.perf_counter() - t0) / inner)
    return best

rows, failed = {}, {}
def put(row, peer, value):
    rows.setdefault(row, {})[peer] = value

def attempt(name, f):
    """Runs one group of rows; a failure is reported, and the other groups still run."""
    try:
        f()
    except Exception as e:   # a peer that lacks an op, or a compiler that fails: its cells stay n/a
        failed[name] = ("%s: %s" % (type(e).__name__, e)).splitlines()[0][:160]

# samples/heat.lua's step, on a 128x128 plate: u + 0.2 * interior * laplacian(u), the border fixed
HN, HC = 128, 128 // 2 - 1   # the plate's size; its centre, 0-based (halua's 64, 1-based)
# the MLP of scripts/bench.lua: 784 -> 1024 -> 1024 -> 10, batch 256, float32
# the attention rows: batch 8, sequence 256, 8 heads of dim 64, float32, no mask
ATT_B, ATT_T, ATT_N, ATT_H = 8, 256, 8, 64
MLP_SHAPES = [("w1", (784, 1024), 0.1), ("b1", (1024,), 0), ("w2", (1024, 1024), 0.06),
              ("b2", (1024,), 0), ("w3", (1024, 10), 0.1), ("b3", (10,), 0)]

def eager_loop(x):
    """scripts/bench's eager_loop_ms: a Python loop updating a small array with numbers."""
    for i in range(1, 100001):
        x = x * 0.999 + i * 1e-6
    return x

def mlp_data(np):
    rng = np.random.default_rng(1)
    params = {k: ((rng.random(s, dtype=np.float32) - 0.5) * sc).astype(np.float32) for k, s, sc in MLP_SHAPES}
    x = ((rng.random((256, 784), dtype=np.float32) - 0.5) * 2).astype(np.float32)
    y = np.eye(10, dtype=np.float32)[np.arange(256) % 10]
    return params, x, y

def decomp_rows(peer, np, conv, svd, qr, eigh, ready=lambda r: r):
    """The decomposition rows (bench.lua's): svd (reduced: svd is called with full_matrices=False),
    qr, eigh of one 256x256 matrix and of a batch of 64 32x32 ones, float64 and float32; eigh's
    matrices symmetric. conv makes the peer's array from a NumPy one; ready waits for an
    asynchronous result."""
    rng = np.random.default_rng(0)
    for dt, tag in (("float64", "f64"), ("float32", "f32")):
        one = (rng.random((256, 256)) - 0.5 + 256 * np.eye(256)).astype(dt)
        many = (rng.random((64, 32, 32)) - 0.5 + 32 * np.eye(32)).astype(dt)
        args = {"svd": (one, many), "qr": (one, many),
                "eigh": ((one + one.T) / 2, (many + many.transpose(0, 2, 1)) / 2)}
        fs = {"svd": svd, "qr": qr, "eigh": eigh}
        for name, f in fs.items():
            a, b = conv(np.ascontiguousarray(args[name][0])), conv(np.ascontiguousarray(args[name][1]))
            put("%s256_%s_ms" % (name, tag), peer, best_of(lambda: ready(f(a)), 3, 3) * 1e3)
            put("%s_batched_%s_ms" % (name, tag), peer, best_of(lambda: ready(f(b)), 3, 3) * 1e3)

FFT_CASES = (("c64", 1024), ("c64", 65536), ("c64", 1048576), ("c64", 1021), ("c64", 65521), ("c64", 1048573),
             ("c128", 65536), ("c128", 65521))

def fft_rows(peer, np, conv, fft, rfft, ready=lambda r: r):
    """The FFT rows (bench.lua's): complex-to-complex transforms of powers of two and primes,
    rfft of 2^20 float32 values, and 256 lanes of 1024 along the last axis; the same inputs as
    bench.lua's (a cosine and a sine of the index as the parts)."""
    for tag, n in FFT_CASES:
        dt = np.float32 if tag == "c64" else np.float64
        i = np.arange(n, dtype=dt)
        z = conv((np.cos(i * dt(0.001)) + 1j * np.sin(i * dt(0.002))).astype(np.complex64 if tag == "c64" else np.complex128))
        put("fft_%s_%d_ms" % (tag, n), peer, best_of(lambda: ready(fft(z)), 3, 1 if n > 100000 else 3) * 1e3)
    r = conv(np.cos(np.arange(1048576, dtype=np.float32) * np.float32(0.001)))
    put("rfft_f32_1048576_ms", peer, best_of(lambda: ready(rfft(r)), 3, 1) * 1e3)
    i = np.arange(256 * 1024, dtype=np.float32).reshape(256, 1024)
    zb = conv((np.cos(i * np.float32(0.001)) + 1j * np.sin(i * np.float32(0.002))).astype(np.complex64))
    put("fft_c64_batched_ms", peer, best_of(lambda: ready(fft(zb)), 3, 3) * 1e3)

def section_numpy():
    import numpy as np
    put("_versions", "numpy", np.__version__)
    def small():
        a = np.ones(8, np.float32); b = np.ones(8, np.float32)
        put("eager_add8_us", "numpy", best_of(lambda: a + b, 5, 20000) * 1e6)
        c = np.ones(1000, np.float32)
        put("eager_c2c_us", "numpy", best_of(lambda: c * 2 + c, 5, 10000) * 1e6)
        put("eager_loop_ms", "numpy", best_of(lambda: eager_loop(np.zeros(8, np.float32)), 3, 1) * 1e3)
    def streams():
        n = 1 << 24
        x = np.full(n, 0.5, np.float32); y = np.full(n, 0.25, np.float32); z = np.full(n, 0.1, np.float32)
        put("fused_ms", "numpy", best_of(lambda: np.tanh(x * y + z), 3, 3) * 1e3)
        put("copy_GBs", "numpy", 2 * 4 * n / best_of(lambda: x.copy(), 3, 5) / 1e9)
    def matmuls():
        for k, reps, inner in ((1024, 3, 5), (256, 5, 50), (2048, 3, 1)):
            mk = np.ones((k, k), np.float32)
            put("matmul%d_gflops" % k, "numpy", 2 * k ** 3 / best_of(lambda: mk @ mk, reps, inner) / 1e9)
        la, lw = np.ones((256, 784), np.float32), np.ones((784, 1024), np.float32)
        put("mlp_layer_gflops", "numpy", 2 * 256 * 784 * 1024 / best_of(lambda: la @ lw, 5, 10) / 1e9)
        lh, lg = np.ones((256, 1024), np.float32), np.ones((256, 1024), np.float32)
        put("wgrad_gflops", "numpy", 2 * 1024 * 256 * 1024 / best_of(lambda: lh.T @ lg, 5, 10) / 1e9)
    def reductions():
        # 4096x4096 float32: a full sum, column sums, row softmax and row logsumexp, a transpose that moves data
        big = np.random.default_rng(1).random((4096, 4096), dtype=np.float32)
        put("sum4096_ms", "numpy", best_of(lambda: big.sum(), 3, 3) * 1e3)
        put("colsum4096_ms", "numpy", best_of(lambda: big.sum(0), 3, 3) * 1e3)
        def softmax(v):
            e = np.exp(v - v.max(1, keepdims=True))
            return e / e.sum(1, keepdims=True)
        def logsumexp(v):
            mx = v.max(1, keepdims=True)
            return (mx + np.log(np.exp(v - mx).sum(1, keepdims=True)))[:, 0]
        put("softmax4096_ms", "numpy", best_of(lambda: softmax(big), 3, 1) * 1e3)
        put("logsumexp4096_ms", "numpy", best_of(lambda: logsumexp(big), 3, 1) * 1e3)
        put("transpose4096_GBs", "numpy", 2 * 4 * 4096 ** 2 / best_of(lambda: np.ascontiguousarray(big.T), 3, 2) / 1e9)
    def heat():
        # samples/heat.lua's 1,000 explicit diffusion steps, as a NumPy loop
        inside = np.zeros((HN, HN), np.float32); inside[1:-1, 1:-1] = 1
        u0 = np.zeros((HN, HN), np.float32); u0[HN * 3 // 8:HN * 5 // 8, HN * 3 // 8:HN * 5 // 8] = 100
        def run():
            u = u0
            for _ in range(1000):
                up = np.concatenate([u[:1], u[:-1]]); down = np.concatenate([u[1:], u[-1:]])
                left = np.concatenate([u[:, :1], u[:, :-1]], 1); right = np.concatenate([u[:, 1:], u[:, -1:]], 1)
                u = u + np.float32(0.2) * inside * (up + down + left + right - 4 * u)
            return u
        put("heat_run_ms", "numpy", best_of(run, 3, 1) * 1e3)
    def solve():
        # one 256x256 system, a batch of 64 32x32 ones (diagonally dominant, float64)
        rng = np.random.default_rng(0)
        sa = rng.random((256, 256)) - 0.5 + 256 * np.eye(256); sb = np.ones(256)
        put("solve256_ms", "numpy", best_of(lambda: np.linalg.solve(sa, sb), 5, 10) * 1e3)
        ba = rng.random((64, 32, 32)) - 0.5 + 32 * np.eye(32); bb = np.ones((64, 32, 1))
        put("solve_batched_ms", "numpy", best_of(lambda: np.linalg.solve(ba, bb), 5, 10) * 1e3)
    def scatter_add():
        # scripts/bench's scatter_add_ms: 10^6 float32 updates into 2^16 bins (its indices, 0-based)
        idx = (np.arange(1, 1000001, dtype=np.int64) * 7919) % 65536
        u = np.full(1000000, 0.5, np.float32); x = np.zeros(65536, np.float32)
        def run():
            y = x.copy()
            np.add.at(y, idx, u)
            return y
        put("scatter_add_ms", "numpy", best_of(run, 3, 3) * 1e3)
    def decomps():
        decomp_rows("numpy", np, lambda x: x, lambda x: np.linalg.svd(x, full_matrices=False), np.linalg.qr, np.linalg.eigh)
    def ffts():
        fft_rows("numpy", np, lambda x: x, np.fft.fft, np.fft.rfft)
    for name, f in [("small", small), ("streams", streams), ("matmuls", matmuls),
                    ("reductions", reductions), ("heat", heat), ("solve", solve),
                    ("scatter_add", scatter_add), ("decompositions", decomps), ("fft", ffts)]:
        attempt("numpy " + name, f)

def section_torch():
    import torch
    put("_versions", "torch", torch.__version__.split("+")[0])
    torch.set_num_threads(os.cpu_count())
    def small():
        a = torch.ones(8); b = torch.ones(8)
        put("eager_add8_us", "torch", best_of(lambda: a + b, 5, 20000) * 1e6)
        c = torch.ones(1000)
        put("eager_c2c_us", "torch", best_of(lambda: c * 2 + c, 5, 10000) * 1e6)
        put("eager_loop_ms", "torch", best_of(lambda: eager_loop(torch.zeros(8)), 3, 1) * 1e3)
    def streams():
        n = 1 << 24
        x = torch.full((n,), 0.5); y = torch.full((n,), 0.25); z = torch.full((n,), 0.1)
        put("fused_ms", "torch", best_of(lambda: torch.tanh(x * y + z), 3, 3) * 1e3)
        put("copy_GBs", "torch", 2 * 4 * n / best_of(lambda: x.clone(), 3, 5) / 1e9)
    def matmuls():
        for k, reps, inner in ((1024, 3, 5), (256, 5, 50), (2048, 3, 1)):
            mk = torch.ones(k, k)
            put("matmul%d_gflops" % k, "torch", 2 * k ** 3 / best_of(lambda: mk @ mk, reps, inner) / 1e9)
        la, lw = torch.ones(256, 784), torch.ones(784, 1024)
        put("mlp_layer_gflops", "torch", 2 * 256 * 784 * 1024 / best_of(lambda: la @ lw, 5, 10) / 1e9)
        lh, lg = torch.ones(256, 1024), torch.ones(256, 1024)
        put("wgrad_gflops", "torch", 2 * 1024 * 256 * 1024 / best_of(lambda: lh.t() @ lg, 5, 10) / 1e9)
    def reductions():
        big = torch.rand(4096, 4096)
        put("sum4096_ms", "torch", best_of(lambda: big.sum(), 3, 3) * 1e3)
        put("colsum4096_ms", "torch", best_of(lambda: big.sum(0), 3, 3) * 1e3)
        put("softmax4096_ms", "torch", best_of(lambda: torch.softmax(big, 1), 3, 1) * 1e3)
        put("logsumexp4096_ms", "torch", best_of(lambda: torch.logsumexp(big, 1), 3, 1) * 1e3)
        put("transpose4096_GBs", "torch", 2 * 4 * 4096 ** 2 / best_of(lambda: big.t().contiguous(), 3, 2) / 1e9)
    def mlp():
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
    t_inside = torch.zeros(HN, HN); t_inside[1:-1, 1:-1] = 1
    t_u0 = torch.zeros(HN, HN); t_u0[HN * 3 // 8:HN * 5 // 8, HN * 3 // 8:HN * 5 // 8] = 100
    def steps(u):
        for _ in range(1000):
            up = torch.cat([u[:1], u[:-1]]); down = torch.cat([u[1:], u[-1:]])
            left = torch.cat([u[:, :1], u[:, :-1]], 1); right = torch.cat([u[:, 1:], u[:, -1:]], 1)
            u = u + 0.2 * t_inside * (up + down + left + right - 4 * u)
        return u
    def heat_grad():
        # the gradient of the centre's final temperature by the initial plate: autograd through
        # the same 1,000 steps written as a Python loop
        def run():
            u0 = t_u0.clone().requires_grad_()
            return torch.autograd.grad(steps(u0)[HC, HC], u0)
        put("heat_grad_run_ms", "torch", best_of(run, 3, 1) * 1e3)
    def heat_jvp():
        # a perturbation of the centre carried through the same steps by forward-mode autodiff
        # (dual numbers)
        import torch.autograd.forward_ad as fwAD
        t_du = torch.zeros(HN, HN); t_du[HC, HC] = 1
        def run():
            with fwAD.dual_level():
                return fwAD.unpack_dual(steps(fwAD.make_dual(t_u0, t_du))).tangent
        put("heat_jvp_run_ms", "torch", best_of(run, 3, 1) * 1e3)
    def solve():
        sa = torch.rand(256, 256, dtype=torch.float64) - 0.5 + 256 * torch.eye(256, dtype=torch.float64)
        sb = torch.ones(256, dtype=torch.float64)
        put("solve256_ms", "torch", best_of(lambda: torch.linalg.solve(sa, sb), 5, 10) * 1e3)
        ba = torch.rand(64, 32, 32, dtype=torch.float64) - 0.5 + 32 * torch.eye(32, dtype=torch.float64)
        bb = torch.ones(64, 32, 1, dtype=torch.float64)
        put("solve_batched_ms", "torch", best_of(lambda: torch.linalg.solve(ba, bb), 5, 10) * 1e3)
    def attention():
        # scaled_dot_product_attention takes [B, heads, T, dim]; the same data as halua's [B, T, heads, dim]
        q, k, v = (torch.rand(ATT_B, ATT_N, ATT_T, ATT_H) - 0.5 for _ in range(3))
        sdpa = torch.nn.functional.scaled_dot_product_attention
        with torch.no_grad():
            put("attention_ms", "torch", best_of(lambda: sdpa(q, k, v), 5, 3) * 1e3)
        qg, kg, vg = (t.clone().requires_grad_() for t in (q, k, v))
        put("attention_grad_ms", "torch", best_of(lambda: torch.autograd.grad(sdpa(qg, kg, vg).sum(), (qg, kg, vg)), 5, 3) * 1e3)
    def ffts():
        import numpy as np
        fft_rows("torch", np, torch.from_numpy, torch.fft.fft, torch.fft.rfft)
    def decomps():
        import numpy as np
        decomp_rows("torch", np, torch.from_numpy, lambda x: torch.linalg.svd(x, full_matrices=False), torch.linalg.qr,
                    torch.linalg.eigh)
    for name, f in [("small", small), ("streams", streams), ("matmuls", matmuls), ("reductions", reductions),
                    ("mlp", mlp), ("heat grad", heat_grad), ("heat jvp", heat_jvp), ("solve", solve),
                    ("attention", attention), ("decompositions", decomps), ("fft", ffts)]:
        attempt("torch " + name, f)

# JAX: float32 on the CPU; every timed call ends in block_until_ready() (JAX dispatches
# asynchronously), and every figure but the eager op's is a jax.jit'd function, as halua's are
def jax_heat(jax, jnp):
    def step(u):
        up = jnp.concatenate([u[:1], u[:-1]]); down = jnp.concatenate([u[1:], u[-1:]])
        left = jnp.concatenate([u[:, :1], u[:, :-1]], 1); right = jnp.concatenate([u[:, 1:], u[:, -1:]], 1)
        i = jnp.arange(HN)
        edge = (i > 0) & (i < HN - 1)
        inside = (edge[:, None] & edge[None, :]).astype(u.dtype)
        return u + 0.2 * inside * (up + down + left + right - 4 * u)
    def simulate(steps):
        return jax.jit(lambda u: jax.lax.fori_loop(0, steps, lambda _, v: step(v), u))
    def sensitivity(steps):
        return jax.jit(jax.grad(lambda u: jax.lax.fori_loop(0, steps, lambda _, v: step(v), u)[HC, HC]))
    def perturbation(steps):
        return jax.jit(lambda u, du: jax.jvp(lambda p: jax.lax.fori_loop(0, steps, lambda _, v: step(v), p),
                                             (u,), (du,))[1])
    i = jnp.arange(HN)
    hot = (i >= HN * 3 // 8) & (i < HN * 5 // 8)
    plate = (hot[:, None] & hot[None, :]).astype(jnp.float32) * 100
    centre = jnp.zeros((HN, HN), jnp.float32).at[HC, HC].set(1)
    return {"heat": (simulate, (plate,)), "heat_grad": (sensitivity, (plate,)),
            "heat_jvp": (perturbation, (plate, centre))}

def jax_mlp(jax, jnp, np):
    params, x, y = mlp_data(np)
    params = {k: jnp.asarray(v) for k, v in params.items()}
    def loss(p, x, y):
        h = jax.nn.relu(x @ p["w1"] + p["b1"])
        h = jax.nn.relu(h @ p["w2"] + p["b2"])
        return -(jax.nn.log_softmax(h @ p["w3"] + p["b3"], -1) * y).sum() / 256
    def sgd(p, x, y):
        l, g = jax.value_and_grad(loss)(p, x, y)
        return l, jax.tree.map(lambda a, b: a - 0.01 * b, p, g)
    return loss, sgd, (params, jnp.asarray(x), jnp.asarray(y))

def section_jax():
    import numpy as np
    import jax, jaxlib
    import jax.numpy as jnp
    put("_versions", "jax", jax.__version__)
    put("_versions", "jaxlib", jaxlib.__version__)
    ready = jax.block_until_ready
    def small():
        a = jnp.ones(8, jnp.float32); b = jnp.ones(8, jnp.float32)
        put("eager_add8_us", "jax", best_of(lambda: (a + b).block_until_ready(), 5, 20000) * 1e6)
        add3 = jax.jit(lambda x, y, w: x + y + w)
        put("jit_call_us", "jax", best_of(lambda: add3(a, b, a).block_until_ready(), 5, 20000) * 1e6)
        def call_loop():
            for _ in range(100000):
                add3(a, b, a).block_until_ready()
        put("jit_call_loop_us", "jax", best_of(call_loop, 3, 1) * 1e6 / 1e5)
        tree_step = jax.jit(lambda q, x: (jnp.sum(x), {k: v * 0.99 + x for k, v in q.items()}))
        tp = {"w1": a, "b1": b, "w2": a, "b2": b}
        put("jit_tree_call_us", "jax", best_of(lambda: jax.block_until_ready(tree_step(tp, a)), 5, 20000) * 1e6)
        c = jnp.ones(1000, jnp.float32)
        put("eager_c2c_us", "jax", best_of(lambda: (c * 2 + c).block_until_ready(), 5, 10000) * 1e6)
        put("eager_loop_ms", "jax", best_of(lambda: eager_loop(jnp.zeros(8, jnp.float32)).block_until_ready(), 3, 1) * 1e3)
    def streams():
        n = 1 << 24
        x = jnp.full(n, 0.5, jnp.float32); y = jnp.full(n, 0.25, jnp.float32); z = jnp.full(n, 0.1, jnp.float32)
        fused = jax.jit(lambda u, v, w: jnp.tanh(u * v + w))
        put("fused_ms", "jax", best_of(lambda: fused(x, y, z).block_until_ready(), 3, 3) * 1e3)
        copy = jax.jit(lambda u: u + 0)
        put("copy_GBs", "jax", 2 * 4 * n / best_of(lambda: copy(x).block_until_ready(), 3, 5) / 1e9)
    def matmuls():
        mm = jax.jit(jnp.matmul)
        for k, reps, inner in ((1024, 3, 5), (256, 5, 50), (2048, 3, 1)):
            mk = jnp.ones((k, k), jnp.float32)
            put("matmul%d_gflops" % k, "jax", 2 * k ** 3 / best_of(lambda: mm(mk, mk).block_until_ready(), reps, inner) / 1e9)
        la, lw = jnp.ones((256, 784), jnp.float32), jnp.ones((784, 1024), jnp.float32)
        put("mlp_layer_gflops", "jax", 2 * 256 * 784 * 1024 / best_of(lambda: mm(la, lw).block_until_ready(), 5, 10) / 1e9)
        lh, lg = jnp.ones((256, 1024), jnp.float32), jnp.ones((256, 1024), jnp.float32)
        put("wgrad_gflops", "jax", 2 * 1024 * 256 * 1024 / best_of(lambda: mm(lh.T, lg).block_until_ready(), 5, 10) / 1e9)
    def reductions():
        big = jnp.asarray(np.random.default_rng(1).random((4096, 4096), dtype=np.float32))
        total = jax.jit(jnp.sum)
        put("sum4096_ms", "jax", best_of(lambda: total(big).block_until_ready(), 3, 3) * 1e3)
        colsum = jax.jit(lambda u: jnp.sum(u, axis=0))
        put("colsum4096_ms", "jax", best_of(lambda: colsum(big).block_until_ready(), 3, 3) * 1e3)
        softmax = jax.jit(lambda u: jax.nn.softmax(u, axis=1))
        put("softmax4096_ms", "jax", best_of(lambda: softmax(big).block_until_ready(), 3, 1) * 1e3)
        lse = jax.jit(lambda u: jax.nn.logsumexp(u, axis=1))
        put("logsumexp4096_ms", "jax", best_of(lambda: lse(big).block_until_ready(), 3, 1) * 1e3)
        transpose = jax.jit(lambda u: u.T)
        put("transpose4096_GBs", "jax", 2 * 4 * 4096 ** 2 / best_of(lambda: transpose(big).block_until_ready(), 3, 2) / 1e9)
    def mlp():
        loss, sgd, args = jax_mlp(jax, jnp, np)
        grad_step = jax.jit(jax.value_and_grad(loss))
        put("mlp_grad_ms", "jax", best_of(lambda: ready(grad_step(*args)), 5, 3) * 1e3)
        sgd_step = jax.jit(sgd)
        put("mlp_sgd_ms", "jax", best_of(lambda: ready(sgd_step(*args)), 5, 3) * 1e3)
        rows["mlp_sgd_compiled_ms"] = {"jax": rows["mlp_sgd_ms"]["jax"]}   # JAX's step is compiled anyway
    def heat():
        for name, (make, args) in jax_heat(jax, jnp).items():
            run = make(1000)
            put(name + "_run_ms", "jax", best_of(lambda: ready(run(*args)), 3, 1) * 1e3)
    def attention():
        key = jax.random.split(jax.random.PRNGKey(0), 3)
        q, k, v = (jax.random.uniform(kk, (ATT_B, ATT_T, ATT_N, ATT_H), jnp.float32) - 0.5 for kk in key)
        fwd = jax.jit(jax.nn.dot_product_attention)
        put("attention_ms", "jax", best_of(lambda: fwd(q, k, v).block_until_ready(), 5, 3) * 1e3)
        grad = jax.jit(jax.grad(lambda a, b, c: jax.nn.dot_product_attention(a, b, c).sum(), argnums=(0, 1, 2)))
        put("attention_grad_ms", "jax", best_of(lambda: ready(grad(q, k, v)), 5, 3) * 1e3)
    for name, f in [("small", small), ("streams", streams), ("matmuls", matmuls),
                    ("reductions", reductions), ("mlp", mlp), ("heat", heat), ("attention", attention)]:
        attempt("jax " + name, f)

def section_startup():
    """startup_ms: a new process that starts and loads the library (`python -c "import numpy"`), as
    scripts/bench times `luajit -e 'require "halua"'`: the best of 10, each peer in turn"""
    for peer, module in (("numpy", "numpy"), ("torch", "torch"), ("jax", "jax")):
        def start():
            subprocess.run([sys.executable, "-c", "import " + module], check=True, stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
        attempt("startup " + peer, lambda: put("startup_ms", peer, best_of(start, 10, 1) * 1e3))

def section_jax_x64():
    # linalg.solve in float64, which JAX computes only with jax_enable_x64 (hence its own process)
    import numpy as np
    import jax
    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp
    def solve():
        solve = jax.jit(jnp.linalg.solve)
        rng = np.random.default_rng(0)
        sa = jnp.asarray(rng.random((256, 256)) - 0.5 + 256 * np.eye(256)); sb = jnp.ones(256, jnp.float64)
        put("solve256_ms", "jax", best_of(lambda: solve(sa, sb).block_until_ready(), 5, 10) * 1e3)
        ba = jnp.asarray(rng.random((64, 32, 32)) - 0.5 + 32 * np.eye(32)); bb = jnp.ones((64, 32, 1), jnp.float64)
        put("solve_batched_ms", "jax", best_of(lambda: solve(ba, bb).block_until_ready(), 5, 10) * 1e3)
    attempt("jax solve", solve)
    def decomps():
        ready = lambda r: jax.block_until_ready(r)
        # (full_matrices is static for JAX: it goes inside the jitted function)
        decomp_rows("jax", np, jnp.asarray, jax.jit(lambda x: jnp.linalg.svd(x, full_matrices=False)),
                    jax.jit(jnp.linalg.qr), jax.jit(jnp.linalg.eigh), ready)
    attempt("jax decompositions", decomps)
    def ffts():
        # (complex128 needs x64, as this section has it)
        fft_rows("jax", np, jnp.asarray, jax.jit(jnp.fft.fft), jax.jit(jnp.fft.rfft), lambda r: jax.block_until_ready(r))
    attempt("jax fft", ffts)

def section_compile(cache, phase):
    """Compile times, in a fresh process: JAX's jit(f).lower(args).compile() (trace, lower, XLA
    compile: what a first call does before it runs), and torch.compile's first call of the MLP
    train step less one later call. Three phases, one process each: "cold" (JAX without its
    persistent cache; torch.compile's cache, on by default, empty under `cache`, which it fills),
    "fill" (JAX fills its persistent cache under `cache`; nothing is recorded) and "warm" (both
    from those caches: the *_warm_ms rows). The cold phase keeps JAX's cache off because JAX drops
    the unused primal loop from the heat perturbation (diffusion is linear), which leaves the
    same program as the heat loop itself: it would be found in the cache the heat loop had just
    filled."""
    suffix = "_warm_ms" if phase == "warm" else "_ms"
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = os.path.join(cache, "inductor")   # before torch loads
    import numpy as np
    def jax_compiles():
        import jax
        import jax.numpy as jnp
        if phase != "cold":
            jax.config.update("jax_compilation_cache_dir", os.path.join(cache, "jax"))
            jax.config.update("jax_persistent_cache_min_compile_time_secs", 0)
            jax.config.update("jax_persistent_cache_min_entry_size_bytes", -1)
        jax.jit(lambda v: v + 1)(jnp.ones(2)).block_until_ready()   # the backend's start, not timed
        _, sgd, args = jax_mlp(jax, jnp, np)
        t0 = time.perf_counter()
        jax.jit(sgd).lower(*args).compile()
        put("mlp_compile" + suffix, "jax", (time.perf_counter() - t0) * 1e3)
        for name, (make, hargs) in jax_heat(jax, jnp).items():
            for steps in (100, 10000):
                if phase == "warm" and steps == 100:
                    continue
                t0 = time.perf_counter()
                make(steps).lower(*hargs).compile()
                put("%s_compile_%s" % (name, "warm_ms" if phase == "warm" else "%d_ms" % steps), "jax",
                    (time.perf_counter() - t0) * 1e3)
    def torch_compile():
        import torch
        torch.set_num_threads(os.cpu_count())
        params, x, y = mlp_data(np)
        params = {k: torch.from_numpy(v) for k, v in params.items()}
        x, y = torch.from_numpy(x), torch.from_numpy(y)
        def loss(p, x, y):
            h = torch.relu(x @ p["w1"] + p["b1"])
            h = torch.relu(h @ p["w2"] + p["b2"])
            return -(torch.log_softmax(h @ p["w3"] + p["b3"], -1) * y).sum() / 256
        def sgd(p, x, y):
            g, l = torch.func.grad_and_value(loss)(p, x, y)
            return l, {k: p[k] - 0.01 * g[k] for k in p}
        step = torch.compile(sgd)
        t0 = time.perf_counter()
        step(params, x, y)
        first = time.perf_counter() - t0
        later = best_of(lambda: step(params, x, y), 5, 3)
        put("mlp_compile" + suffix, "torch", (first - later) * 1e3)
        if phase == "cold":
            put("mlp_sgd_compiled_ms", "torch", later * 1e3)
    attempt("jax compile " + phase, jax_compiles)
    if phase == "fill":
        rows.clear()
    else:
        attempt("torch.compile " + phase, torch_compile)

def run_section(args):
    """Runs one section in a fresh process and merges what it printed."""
    try:
        p = subprocess.run([sys.executable, os.path.abspath(__file__)] + args, capture_output=True, text=True)
        out = json.loads(p.stdout.strip().splitlines()[-1])
    except Exception as e:
        failed[" ".join(args)] = "the process failed (%s)" % type(e).__name__
        return
    for row, cells in out.items():
        if row == "_failed":
            failed.update(cells)
        else:
            rows.setdefault(row, {}).update(cells)

def main():
    if len(sys.argv) > 1:
        section = sys.argv[1]
        if section == "compile":
            section_compile(sys.argv[2], sys.argv[3])
        else:
            try:
                globals()["section_" + section]()
            except ImportError as e:
                failed[section] = "not installed (%s)" % e
    else:
        for section in ("numpy", "torch", "jax", "jax_x64", "startup"):
            run_section([section])
        with tempfile.TemporaryDirectory(prefix="halua-bench-caches-") as cache:
            for phase in ("cold", "fill", "warm"):
                run_section(["compile", cache, phase])
        venv = sys.prefix != sys.base_prefix
        rows["_source"] = {"python": "PyPI, build/peers venv" if venv else "Debian's python3 packages"}
    if failed:
        rows["_failed"] = {k: v.replace('"', "'").replace("{", "(").replace("}", ")").replace("\\", "/")
                           for k, v in failed.items()}
    json.dump(rows, sys.stdout)
    print()

main()
