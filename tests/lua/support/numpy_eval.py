#!/usr/bin/env python3
"""Evaluates NumPy expressions for the Lua specs: reads a JSON list of cases
{"expr": "...", "inputs": [{"dtype", "shape", "values"}...]} (inputs are a, b, c, ... in the
expression), prints a Lua chunk returning, per case, {dtype=, shape=, values=} or {error=}."""
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

def lua_value(v):
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

def main():
    cases = json.load(open(sys.argv[1]))
    out = ["return {"]
    for case in cases:
        env = {"np": np, "math": math, "bf16": bf16, "lse": lse}
        for name, inp in zip("abcdefgh", case["inputs"]):
            if inp["dtype"] == "scalar":
                env[name] = inp["values"][0]
            elif inp["dtype"] == "bfloat16":   # exact in float32; expressions compute in float32 and wrap with bf16()
                env[name] = np.array(inp["values"], dtype=np.float32).reshape(inp["shape"])
            else:
                env[name] = np.array(inp["values"], dtype=inp["dtype"]).reshape(inp["shape"])
        try:
            with np.errstate(all="ignore"):
                r = eval(case["expr"], env)
            dtype = "bfloat16" if isinstance(r, BF16) else None
            r = r.values if isinstance(r, BF16) else np.asarray(r)
            flat = r.reshape(-1).tolist()
            out.append("{dtype=%s, shape={%s}, values={%s}}," % (
                json.dumps(dtype or str(r.dtype)), ",".join(str(d) for d in r.shape), ",".join(lua_value(v) for v in flat)))
        except Exception as e:
            out.append("{error=%s}," % json.dumps(type(e).__name__ + ": " + str(e)))
    out.append("}")
    sys.stdout.write("\n".join(out))

main()
