#!/usr/bin/env python3
"""Evaluates NumPy expressions for the Lua specs: reads a JSON list of cases
{"expr": "...", "inputs": [{"dtype", "shape", "values"}...]} (inputs are a, b, c, ... in the
expression), prints a Lua chunk returning, per case, {dtype=, shape=, values=} or {error=}."""
import json, math, sys
import numpy as np

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
        env = {"np": np, "math": math}
        for name, inp in zip("abcdefgh", case["inputs"]):
            if inp["dtype"] == "scalar":
                env[name] = inp["values"][0]
            else:
                env[name] = np.array(inp["values"], dtype=inp["dtype"]).reshape(inp["shape"])
        try:
            with np.errstate(all="ignore"):
                r = np.asarray(eval(case["expr"], env))
            flat = r.reshape(-1).tolist()
            out.append("{dtype=%s, shape={%s}, values={%s}}," % (
                json.dumps(str(r.dtype)), ",".join(str(d) for d in r.shape), ",".join(lua_value(v) for v in flat)))
        except Exception as e:
            out.append("{error=%s}," % json.dumps(type(e).__name__ + ": " + str(e)))
    out.append("}")
    sys.stdout.write("\n".join(out))

main()
