-- hl.sort and hl.argsort along one axis (default the last, as NumPy's), also methods x:sort(),
-- x:argsort(). Both are primitives (engine/host/hl_sort.c: a stable merge sort per lane on the
-- host, an extern stage inside jit pipelines), stable like NumPy's kind="stable", with NaN after
-- everything else. argsort's indices are 1-based int64. sort's derivative moves the cotangent
-- back through the inverse permutation (rules.lua).
return function(hl, core, shared)
  local util = require "halua.util"
  local function operand(op, x, axis)
    x = shared.as_array(x, op)
    if x.ndim == 0 then util.fail("%s: cannot sort a 0-d array; give it an axis first (hl.reshape(x, {1}))", op) end
    return x, shared.norm_axis(op, axis == nil and -1 or axis, x.ndim)
  end

  -- the 2-byte floats sort as float32 (exact, same order)
  local function half(d) return d == "float16" or d == "bfloat16" end

  function hl.sort(x, axis)
    local a
    x, a = operand("sort", x, axis)
    if half(x.dtype) then return core.sort(x:astype("float32"), a, false):astype(x.dtype) end
    return core.sort(x, a, false)
  end

  function hl.argsort(x, axis)
    local a
    x, a = operand("argsort", x, axis)
    if half(x.dtype) then x = x:astype("float32") end
    return core.sort(x, a, true) + 1
  end

  shared.methods.sort, shared.methods.argsort = hl.sort, hl.argsort
end
