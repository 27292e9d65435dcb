#!/usr/bin/env python3
"""Evaluates NumPy expressions for the Lua specs: reads a JSON list of cases
{"expr": "...", "inputs": [{"dtype", "shape", "values"}...]} (inputs are a, b, c, ... in the
expression), prints a Lua chunk returning, per case, {dtype=, shape=, values=} or {error=} (and spread= for
an mc() result: the program fuzzer's per-element rounding sensitivity, see mc below)."""
import json, math, sys, warnings
import numpy as np

warnings.simplefilter("ignore")   # means of empty slices and the like: the values are what is compared

class BF16:
    """A bfloat16 result: NumPy has no bfloat16, so bf16(x) rounds x as halua does (a float64 or
    a wide integer through float32 rounded to odd, then float32 to bfloat16 to nearest, ties to
    even; NaN stays NaN, overflow gives inf) and keeps the values as float32."""
    def __init__(self, x):
        x64 = np.asarray(x).astype(np.float64)
        f = x64.astype(np.float32)
        inexact = np.isfinite(x64) & (f.astype(np.float64) != x64)
        away = inexact & (np.abs(f.astype(np.float64)) > np.abs(x64))
        f = np.where(away, np.nextafter(f, np.float32(0)), f).astype(np.float32)
        bits = f.view(np.uint32).copy()
        bits[inexact] |= np.uint32(1)                      # round to odd
        rounded = (bits + np.uint32(0x7FFF) + ((bits >> np.uint32(16)) & np.uint32(1))) & np.uint32(0xFFFF0000)
        out = np.where(np.isnan(f), np.float32(np.nan), rounded.view(np.float32))
        self.values = np.asarray(out, dtype=np.float32)
        self.dtype = "bfloat16"
        self.shape = self.values.shape

def bf16(x):
    return BF16(x)

def ties_to_second(f):
    """np.maximum or np.minimum under one rule for a tie of -0.0 and 0.0, halua's in every dtype:
    the second operand. NumPy's float32 and float64 loops give the second, its float16 loop the
    first, so float16 goes through float32 (exact: the result is one of the operands)."""
    def g(a, b):
        a, b = np.asarray(a), np.asarray(b)
        if np.result_type(a, b) == np.float16:
            return f(a.astype(np.float32), b.astype(np.float32)).astype(np.float16)
        return f(a, b)
    return g

maximum, minimum = ties_to_second(np.maximum), ties_to_second(np.minimum)

def lse(a, axis=None, keepdims=False):
    """logsumexp in float64, stably (max subtracted, 0 where the max is not finite); an empty
    reduction gives -inf, as log(sum(exp([]))) does"""
    a = np.asarray(a, dtype=np.float64)
    m = np.amax(a, axis=axis, keepdims=True, initial=-np.inf)
    m = np.where(np.isfinite(m), m, 0)
    r = np.log(np.sum(np.exp(a - m), axis=axis, keepdims=True)) + m
    if not keepdims:
        r = r.reshape(np.sum(a, axis=axis).shape)
    return r

EPS = {"float32": 2.0 ** -23, "float64": 2.0 ** -52, "float16": 2.0 ** -10, "bfloat16": 2.0 ** -7}
TINY = {"float32": 2.0 ** -126, "float64": 2.0 ** -1022, "float16": 2.0 ** -14, "bfloat16": 2.0 ** -126}
NPT = {"float32": np.float32, "float64": np.float64, "float16": np.float16, "bfloat16": np.float32,
       "int8": np.int8, "int32": np.int32, "int64": np.int64, "uint8": np.uint8, "bool": np.bool_}

def in_dtype(x, dt):
    """x as NumPy values of halua dtype dt (bfloat16: float32 values rounded to bfloat16)"""
    if dt == "bfloat16":
        return BF16(x).values
    return np.asarray(x).astype(NPT[dt])

NONFINITE = np.array([0.0, 1.0, -1.0, 2.5, np.nan, np.inf, -np.inf])

class Perturb:
    """P(x, dt [, ulps] [, bound]) inside an mc() program: x (values of halua dtype dt) as it is
    in the nominal run, and moved by up to ulps units of dt's last place plus `bound` (an array
    of absolute error bounds, e.g. n * eps * sum|x| for a sum) in the perturbed runs, rounded to
    dt again. Integer and bool values are never moved. With nonfinite, a NaN or an infinity
    becomes another value (finite or not), as a jitted pipeline's float simplifications may make
    it (Halide folds x * 0 to 0 and x - x to 0, assuming finite values: docs/halide.md)."""
    def __init__(self, rng, nonfinite=False):
        self.rng, self.nonfinite = rng, nonfinite
    def __call__(self, x, dt, ulps=4, bound=None):
        x = np.asarray(x)
        if self.rng is None or dt not in EPS:
            return x
        x64 = x.astype(np.float64)
        d = ulps * EPS[dt] * (np.abs(x64) + TINY[dt])
        if bound is not None:
            d = d + np.abs(np.asarray(bound, dtype=np.float64))
        d = np.where(np.isfinite(d), d, 0)
        y = x64 + self.rng.uniform(-1.0, 1.0, x64.shape) * d
        if self.nonfinite:
            y = np.where(np.isfinite(x64), y, self.rng.choice(NONFINITE, x64.shape))
        else:
            y = np.where(np.isfinite(x64), y, x64)
        return in_dtype(y, dt)

class Sensitive:
    """mc()'s result: the nominal values, and per element how far perturbed runs moved it
    (inf where a run gave another NaN/inf pattern, or another integer or bool); spread_jit also
    counts the runs that changed NaN and infinities (when asked for)"""
    def __init__(self, values, dtype, spread, spread_jit=None):
        self.values, self.dtype, self.shape, self.spread, self.spread_jit = values, dtype, values.shape, spread, spread_jit

def mc(f, dt, runs=6, seed=0, nonfinite=False):
    """Monte Carlo arithmetic for one program: f(P) computes it in halua's dtypes, every rounded
    step written P(value, dtype [, ulps] [, bound]). The nominal run (P the identity) is the
    reference; `runs` perturbed runs (each rounding moved by a few units in the last place, each
    accumulation by its error bound) measure how sensitive each element is to rounding, which is
    the tolerance a comparison with an implementation that rounds otherwise needs. With
    nonfinite, `runs` more also replace each NaN and infinity a step produces (spread_jit)."""
    nominal = np.asarray(f(Perturb(None)))
    want = NPT[dt]
    if nominal.dtype != np.dtype(want):
        raise TypeError("the program computes %s, expected %s (halua's %s)" % (nominal.dtype, np.dtype(want), dt))
    nom = nominal.astype(np.float64) if dt not in ("bool",) else nominal
    rng = np.random.default_rng(seed)
    def spread_of(nonfinite):
        spread = np.zeros(nominal.shape, dtype=np.float64)
        for _ in range(runs):
            try:
                v = np.asarray(f(Perturb(rng, nonfinite)))
            except Exception:
                spread[...] = np.inf
                break
            if dt in EPS:
                v = v.astype(np.float64)
                same = (np.isnan(v) & np.isnan(nom)) | (np.isinf(nom) & (v == nom))
                dev = np.where(np.isfinite(nom) & np.isfinite(v), np.abs(v - nom), np.inf)
                spread = np.maximum(spread, np.where(same, 0, dev))
            else:
                spread = np.where(v != nominal, np.inf, spread)
        return spread
    spread = spread_of(False)
    spread_jit = np.maximum(spread, spread_of(True)) if nonfinite else None
    return Sensitive(nominal, dt, spread, spread_jit)

def absum(x, axis=None, keepdims=False):
    """sum |x| in float64: the scale of an accumulation's rounding error"""
    return np.sum(np.abs(np.asarray(x, dtype=np.float64)), axis=axis, keepdims=keepdims)

def lua_value(v):
    if isinstance(v, (complex, np.complexfloating)):   # the pair {re, im}, as halua gives it
        return "{%s, %s}" % (lua_value(v.real), lua_value(v.imag))
    if isinstance(v, (bool, np.bool_)):
        return "true" if v else "false"
    if isinstance(v, (int, np.integer)):
        return str(int(v))
    v = float(v)
    if math.isnan(v):
        return "0/0"
    if math.isinf(v):
        return "1/0" if v > 0 else "-1/0"
    return repr(v)

# NumPy 2 renamed np.trapz to np.trapezoid and refuses 2-element vectors in np.cross; the
# expectations are written with NumPy 1.x's names and its cross of 2-vectors (z = 0 supplied;
# two 2-vectors give the z component alone), as halua's hl.cross follows it
if not hasattr(np, "trapz"):
    np.trapz = np.trapezoid
if int(np.__version__.split(".")[0]) >= 2:
    _cross = np.cross

    def _cross_v1(a, b, axisa=-1, axisb=-1, axisc=-1, axis=None):
        if axis is not None:
            axisa = axisb = axisc = axis
        a, b = np.moveaxis(np.asarray(a), axisa, -1), np.moveaxis(np.asarray(b), axisb, -1)
        if a.shape[-1] not in (2, 3) or b.shape[-1] not in (2, 3):
            return _cross(a, b)   # (NumPy's own error)
        def pad(v):
            return v if v.shape[-1] == 3 else np.concatenate([v, np.zeros(v.shape[:-1] + (1,), v.dtype)], -1)
        c = _cross(pad(a), pad(b))
        if a.shape[-1] == 2 and b.shape[-1] == 2:
            return c[..., 2]
        return np.moveaxis(c, -1, axisc)
    np.cross = _cross_v1

    # NumPy 2 refuses complex quantiles and gives a complex lane with a NaN its NaN element as
    # median; halua follows NumPy 1.x there: complex values sorted in lexicographic order,
    # interpolated between neighbours (NumPy's lerp), and nan+0j for a lane with a NaN
    _quantile, _percentile, _median = np.quantile, np.percentile, np.median

    def _complex_quantile_v1(a, q, axis=None, out=None, overwrite_input=False, method="linear", keepdims=False):
        a = np.asarray(a)
        if not np.iscomplexobj(a):
            return _quantile(a, q, axis=axis, method=method, keepdims=keepdims)
        q = np.asarray(q)
        axes = tuple(range(a.ndim)) if axis is None else ((axis,) if np.isscalar(axis) else tuple(axis))
        axes = tuple(x % a.ndim for x in axes)
        kept = [d for d in range(a.ndim) if d not in axes]
        lanes = np.transpose(a, kept + list(axes)).reshape([a.shape[d] for d in kept] + [-1])
        s = np.sort(lanes, axis=-1)
        n = s.shape[-1]
        g = _quantile(np.arange(n, dtype=np.float64), q, method=method)   # the virtual index of each q
        lo = np.floor(g).astype(np.int64)
        hi = np.minimum(lo + 1, n - 1)
        t = (g - lo).astype(s.real.dtype)
        qaxes = list(range(s.ndim - 1, s.ndim - 1 + q.ndim))   # (q's axes first, as NumPy puts them)
        sa = np.moveaxis(s[..., lo], qaxes, list(range(q.ndim)))
        sb = np.moveaxis(s[..., hi], qaxes, list(range(q.ndim)))
        tt = t.reshape(t.shape + (1,) * (s.ndim - 1))
        d = sb - sa
        r = np.where(tt >= 0.5, sb - d * (1 - tt), sa + d * tt).astype(a.dtype)
        nan = np.isnan(s[..., -1])
        r = np.where(nan, np.array(complex(np.nan, 0), a.dtype), r)
        if keepdims:
            shape = [1 if d in axes else a.shape[d] for d in range(a.ndim)]
            r = r.reshape(q.shape + tuple(shape))
        return r

    def _complex_percentile_v1(a, q, axis=None, out=None, overwrite_input=False, method="linear", keepdims=False):
        if not np.iscomplexobj(a):
            return _percentile(a, q, axis=axis, method=method, keepdims=keepdims)
        return _complex_quantile_v1(a, np.asarray(q) / 100, axis=axis, method=method, keepdims=keepdims)

    def _complex_median_v1(a, axis=None, out=None, overwrite_input=False, keepdims=False):
        if not np.iscomplexobj(a):
            return _median(a, axis=axis, keepdims=keepdims)
        return _complex_quantile_v1(a, 0.5, axis=axis, keepdims=keepdims)
    np.quantile, np.percentile, np.median = _complex_quantile_v1, _complex_percentile_v1, _complex_median_v1

def main():
    cases = json.load(open(sys.argv[1]))
    out = ["return {"]
    for case in cases:
        env = {"np": np, "math": math, "bf16": bf16, "lse": lse, "mc": mc, "in_dtype": in_dtype,
               "absum": absum, "maximum": maximum, "minimum": minimum}
        for name, inp in zip("abcdefgh", case["inputs"]):
            if inp["dtype"] == "scalar":
                env[name] = inp["values"][0]
            elif inp["dtype"] == "bfloat16":   # exact in float32; expressions compute in float32 and wrap with bf16()
                env[name] = np.array(inp["values"], dtype=np.float32).reshape(inp["shape"])
            elif inp["dtype"] in ("complex64", "complex128"):   # elements arrive as [re, im]
                v = np.array(inp["values"], dtype=np.float64).reshape(-1, 2)
                c = np.empty(len(v), dtype=inp["dtype"])   # (not re + 1j * im: 1j * inf has a NaN real part)
                c.real, c.imag = v[:, 0], v[:, 1]
                env[name] = c.reshape(inp["shape"])
            else:
                env[name] = np.array(inp["values"], dtype=inp["dtype"]).reshape(inp["shape"])
        try:
            with np.errstate(all="ignore"):
                r = eval(case["expr"], env)
            spread = ""
            if isinstance(r, Sensitive):
                spread = ", spread={%s}" % ",".join(lua_value(v) for v in r.spread.reshape(-1).tolist())
                if r.spread_jit is not None:
                    spread += ", spread_jit={%s}" % ",".join(lua_value(v) for v in r.spread_jit.reshape(-1).tolist())
            dtype = r.dtype if isinstance(r, (BF16, Sensitive)) else None
            r = r.values if isinstance(r, (BF16, Sensitive)) else np.asarray(r)
            flat = r.reshape(-1).tolist()
            out.append("{dtype=%s, shape={%s}, values={%s}%s}," % (
                json.dumps(dtype or str(r.dtype)), ",".join(str(d) for d in r.shape), ",".join(lua_value(v) for v in flat), spread))
        except Exception as e:
            out.append("{error=%s}," % json.dumps(type(e).__name__ + ": " + str(e)))
    out.append("}")
    sys.stdout.write("\n".join(out))

if __name__ == "__main__":
    main()
