-- Complex arrays (docs/complex.md): hl.complex, real, imag, conj, angle. complex64 and complex128
-- store (re, im) pairs as NumPy does; the primitives view_as_real and view_as_complex see a
-- complex array of shape S as the float array S..[2] of its pairs and back, and these functions
-- are built on them, so their derivatives and batching follow from those two rules
-- (lua/halua/rules.lua). Arithmetic, abs, exp, log and sqrt are composed in the engine
-- (engine/runtime/hl_complex_ops.c) so that the operators work on complex arrays too.
return function(hl, core, shared)
  local util = require "halua.util"
  local fail = util.fail

  local function is_complex(x) return x.dtype == "complex64" or x.dtype == "complex128" end

  -- part k (0: re, 1: im) of a complex array, a float array of its shape
  local function part(z, k)
    local p = core.view_as_real(z)
    local start, step, count = {}, {}, {}
    for i = 1, p.ndim do start[i], step[i], count[i] = 0, 1, p.shape[i] end
    start[p.ndim], count[p.ndim] = k, 1
    return core.reshape(core.slice(p, start, step, count), z.shape)
  end

  local function broadcast_shape(a, b)
    local n, r = math.max(#a, #b), {}
    for i = 1, n do
      local x, y = a[#a - n + i] or 1, b[#b - n + i] or 1
      if x ~= y and x ~= 1 and y ~= 1 then
        fail("complex: the parts' shapes %s and %s do not broadcast", util.shape_str(a), util.shape_str(b))
      end
      r[i] = x == 1 and y or x
    end
    return r
  end

  function hl.complex(re, im)
    if im == nil then im = 0 end
    re, im = shared.as_array(re, "complex", 1), shared.as_array(im, "complex", 2)
    for k, x in ipairs {re, im} do
      if is_complex(x) then fail("complex: argument %d is already %s; its parts are hl.real(x) and hl.imag(x)", k, x.dtype) end
    end
    -- float64 parts give complex128; any other real dtype (ints, bool, the 2-byte floats) complex64
    local t = (re.dtype == "float64" or im.dtype == "float64") and "float64" or "float32"
    re, im = re:astype(t), im:astype(t)
    local shape = broadcast_shape(re.shape, im.shape)
    return core.view_as_complex(hl.stack({hl.broadcast_to(re, shape), hl.broadcast_to(im, shape)}, -1))
  end

  function hl.real(x)
    x = shared.as_array(x, "real")
    return is_complex(x) and part(x, 0) or x
  end

  function hl.imag(x)
    x = shared.as_array(x, "imag")
    return is_complex(x) and part(x, 1) or hl.zeros_like(x)
  end

  function hl.conj(x)
    x = shared.as_array(x, "conj")
    if not is_complex(x) then return x end
    return core.view_as_complex(core.view_as_real(x) * core.array({1, -1}, x.dtype == "complex128" and "float64" or "float32"))
  end

  -- the argument in (-pi, pi]; of a real array, 0 or pi (NumPy's angle), as a float array
  function hl.angle(x)
    x = shared.as_array(x, "angle")
    if is_complex(x) then return hl.atan2(part(x, 1), part(x, 0)) end
    local f = (x.dtype == "float64" or x.dtype == "float32") and x or x:astype("float32")
    return hl.atan2(hl.zeros_like(f), f)
  end

  for _, name in ipairs {"real", "imag", "conj", "angle"} do shared.methods[name] = hl[name] end
end
