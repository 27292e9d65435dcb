-- hl.sort and hl.argsort along one axis (default the last, as NumPy's), also methods x:sort(),
-- x:argsort(). Both are primitives (engine/host/hl_sort.c: a stable merge sort per lane on the
-- host, an extern stage inside jit pipelines), stable like NumPy's kind="stable", with NaN after
-- everything else; complex arrays in NumPy's order (below). argsort's indices are 1-based int64. sort's derivative moves the cotangent
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

  -- NumPy's order of complex numbers: by real part, then imaginary part, and those with a NaN part
  -- last, as R + nanj, then nan + Rj, then nan + nanj. Stable sorts by each key from the least
  -- significant one give it: the permutation (0-based) along axis a.
  local function complex_order(z, a)
    local re, im = hl.real(z), hl.imag(z)
    local class = hl.isnan(re):astype("int32") * 2 + hl.isnan(im):astype("int32")
    local p = core.sort(im, a, true)
    for _, key in ipairs {re, class} do
      p = hl.take_along_axis(p, core.sort(hl.take_along_axis(key, p + 1, a + 1), a, true) + 1, a + 1)
    end
    return p
  end
  local function is_complex(d) return d == "complex64" or d == "complex128" end

  function hl.sort(x, axis)
    local a
    x, a = operand("sort", x, axis)
    if is_complex(x.dtype) then return hl.take_along_axis(x, complex_order(x, a) + 1, a + 1) end
    if half(x.dtype) then return core.sort(x:astype("float32"), a, false):astype(x.dtype) end
    return core.sort(x, a, false)
  end

  function hl.argsort(x, axis)
    local a
    x, a = operand("argsort", x, axis)
    if is_complex(x.dtype) then return complex_order(x, a) + 1 end
    if half(x.dtype) then x = x:astype("float32") end
    return core.sort(x, a, true) + 1
  end

  shared.methods.sort, shared.methods.argsort = hl.sort, hl.argsort
end
