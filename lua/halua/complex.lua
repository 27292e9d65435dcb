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

  local function is_number(v) return type(v) == "number" or type(v) == "boolean" end
  -- a part given as a number goes where the other part is: into its trace, or onto its device
  local function beside(v, other)
    if not is_number(v) or not core.is_array(other) then return v end
    -- (into a jit trace as a constant of the program: a captured array, broadcast to the other
    -- part's shape, would be copied whole into every call, and differ between dynamic sizes)
    if core.is_tracer(other) then return hl.fill_like(other, v, {}, type(v) == "boolean" and "bool" or "float32") end
    return util.where_is(core, core.array(v), other)
  end

  function hl.complex(re, im)
    if im == nil then im = 0 end
    if is_number(re) and is_number(im) then re = hl.asarray(re) end   -- (on the default device, as hl.array)
    re, im = beside(re, im), beside(im, re)
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
    local p = core.view_as_real(x)
    return core.view_as_complex(p * util.where_is(core, core.array({1, -1}, p.dtype), p))
  end

  -- the argument in (-pi, pi]; of a real array, 0 or pi (NumPy's angle), as a float array
  function hl.angle(x)
    x = shared.as_array(x, "angle")
    if is_complex(x) then return hl.atan2(part(x, 1), part(x, 0)) end
    local f = (x.dtype == "float64" or x.dtype == "float32") and x or x:astype("float32")
    return hl.atan2(hl.zeros_like(f), f)
  end

  ---------------------------------------------------------------- inverse hyperbolic functions

  -- swap(x + iy) = y + ix: asinh z = swap(asin(swap z)) and atanh z = swap(atan(swap z)), C99's
  -- identities (the engine composes asin and atan with NumPy's branch cuts)
  local function swap(z) return core.view_as_complex(hl.flip(core.view_as_real(z), -1)) end
  -- C's signbit: true for -0 too (atan2(-0, -1) is -pi), so the cuts take the side of the zero's sign
  local function signbit(x) return hl.atan2(x, -1):lt(0) end
  -- past this |x|, x^2 loses the 1 of 1 + x^2, and asinh x is log 2|x| to working precision
  local function big_of(x) return x.dtype == "float64" and 1e8 or 1e4 end
  local LN2 = math.log(2)

  -- each branch's operand is made harmless where the other branch serves (a log of 1, not of 0):
  -- a select's zero cotangent times an infinite partial derivative would be NaN
  local function asinh_real(x)
    local a = hl.abs(x)
    local big = a:gt(big_of(x))
    local s, b = hl.where(big, 0, a), hl.where(big, a, 1)
    local s2 = s * s
    local r = hl.where(big, hl.log(b) + LN2, hl.log1p(s + s2 / (hl.sqrt(s2 + 1) + 1)))
    return hl.where(x:lt(0), -r, r)
  end

  -- log(x + sqrt(x^2 - 1)) = log1p((x - 1) + sqrt((x - 1)(x + 1))); NaN below 1, as NumPy's
  local function acosh_real(x)
    local big = x:gt(big_of(x))
    local s, b = hl.where(big, 1, x), hl.where(big, x, 1)
    return hl.where(big, hl.log(b) + LN2, hl.log1p((s - 1) + hl.sqrt((s - 1) * (s + 1))))
  end

  local function float_of(x, op)
    x = shared.as_array(x, op)
    if is_complex(x) or x.dtype == "float32" or x.dtype == "float64" or x.dtype == "float16" or x.dtype == "bfloat16" then return x end
    return x:astype("float32")
  end

  function hl.asinh(x)
    x = float_of(x, "asinh")
    if is_complex(x) then return swap(hl.asin(swap(x))) end
    return asinh_real(x)
  end

  function hl.acosh(x)
    x = float_of(x, "acosh")
    if not is_complex(x) then return acosh_real(x) end
    -- C99's cacosh from cacos: |Im acos z| + i Re acos z with the sign of Im z
    local w = hl.acos(x)
    local re = hl.real(w)
    return hl.complex(hl.abs(hl.imag(w)), hl.where(signbit(hl.imag(x)), -re, re))
  end

  -- log1p(2x / (1 - x)) / 2
  function hl.atanh(x)
    x = float_of(x, "atanh")
    if is_complex(x) then return swap(hl.atan(swap(x))) end
    return hl.log1p(2 * x / (1 - x)) * 0.5
  end

  -- NumPy's names
  hl.arcsin, hl.arccos, hl.arctan = hl.asin, hl.acos, hl.atan
  hl.arcsinh, hl.arccosh, hl.arctanh = hl.asinh, hl.acosh, hl.atanh

  ---------------------------------------------------------------- reductions

  -- x moved so that the axes in ax (0-based) are one last axis: returns it and the kept extents
  local function gather_axes(x, ax)
    local red, perm, kept, n = {}, {}, {}, 1
    for _, a in ipairs(ax) do red[a] = true end
    local shape = x.shape
    for a = 0, x.ndim - 1 do
      if not red[a] then perm[#perm + 1], kept[#kept + 1] = a, shape[a + 1] end
    end
    for _, a in ipairs(ax) do perm[#perm + 1], n = a, n * shape[a + 1] end
    local s = {}
    for i, e in ipairs(kept) do s[i] = e end
    s[#s + 1] = n
    return core.reshape(core.transpose(x, perm), s), kept
  end

  local function result_shape(shape, ax, keepdims, kept)
    if not keepdims then return kept end
    return util.keep_shape(shape, ax)
  end

  -- the product of complex numbers over the last axis, by halves in log2(n) complex products
  -- (a 1 pads an odd count); 1 over nothing
  local function prod_last(y)
    local n = y.shape[y.ndim]
    if n == 0 then
      local s = y.shape
      s[#s] = 1
      return hl.ones(s, y.dtype)
    end
    while n > 1 do
      if n % 2 == 1 then
        local s = y.shape
        s[#s] = 1
        y = hl.concatenate({y, hl.ones(s, y.dtype)}, -1)
        n = n + 1
      end
      local h = n / 2
      y = util.slice_axis(core, y, y.ndim - 1, 0, h) * util.slice_axis(core, y, y.ndim - 1, h, h)
      n = h
    end
    return y
  end

  local prod = hl.prod
  function hl.prod(x, axes, keepdims)
    x = shared.as_array(x, "prod")
    if not is_complex(x) then return prod(x, axes, keepdims) end
    if type(axes) == "boolean" then axes, keepdims = nil, axes end
    local ax = util.norm_axes("prod", axes, x.ndim)
    local y, kept = gather_axes(x, ax)
    return core.reshape(prod_last(y), result_shape(x.shape, ax, keepdims, kept))
  end

  -- NumPy orders complex numbers by real part, then imaginary part; an element with a NaN part
  -- is the extreme of max and min alike, the first one wins (NumPy's argmax and max)
  local function first(b, a) return hl.argmax(b, a + 1, true) - 1 end   -- 0-based, kept axis
  local function lex_arg(y, a, is_max)
    local re, im = part(y, 0), part(y, 1)
    local bad = hl.logical_or(hl.isnan(re), hl.isnan(im))
    local ext, fill = is_max and hl.max or hl.min, is_max and -math.huge or math.huge
    local r = hl.where(bad, fill, re)
    local on = hl.logical_and(r:eq(ext(r, a + 1, true)), hl.logical_not(bad))
    local top = hl.logical_and(on, im:eq(ext(hl.where(on, im, fill), a + 1, true)))
    return hl.where(hl.any(bad, a + 1, true), first(bad, a), first(top, a))
  end

  local function no_identity(op, x, ax)
    for _, a in ipairs(ax) do
      if x.shape[a + 1] == 0 then
        fail("%s: zero-size axis %d of shape %s has no %s", op, a + 1, util.shape_str(x.shape), op:sub(1, 3) == "arg" and "index" or "identity")
      end
    end
  end

  local function extreme(name, is_max)
    local real_fn = hl[name]
    hl[name] = function(x, axes, keepdims)
      x = shared.as_array(x, name)
      if not is_complex(x) then return real_fn(x, axes, keepdims) end
      if type(axes) == "boolean" then axes, keepdims = nil, axes end
      local ax = util.norm_axes(name, axes, x.ndim)
      no_identity(name, x, ax)
      local y, kept = gather_axes(x, ax)
      local v = hl.take_along_axis(y, lex_arg(y, y.ndim - 1, is_max) + 1, -1)
      return core.reshape(v, result_shape(x.shape, ax, keepdims, kept))
    end
  end
  extreme("max", true)
  extreme("min", false)

  local function arg_extreme(name, is_max)
    local real_fn = hl[name]
    hl[name] = function(x, axis, keepdims)
      x = shared.as_array(x, name)
      if not is_complex(x) then return real_fn(x, axis, keepdims) end
      local shape = x.shape
      if axis == nil then x = core.reshape(x, {x.size}) end
      local a = axis == nil and 0 or util.norm_axis(name, axis, x.ndim)
      no_identity(name, x, {a})
      local r = lex_arg(x, a, is_max) + 1   -- 1-based, the axis kept with extent 1
      -- without an axis every axis is kept with extent 1, as NumPy's argmax(keepdims=True)
      if keepdims then return axis == nil and core.reshape(r, result_shape(shape, util.norm_axes(name, nil, #shape), true)) or r end
      local s = {}
      for i = 1, x.ndim do if i ~= a + 1 then s[#s + 1] = x.shape[i] end end
      return core.reshape(r, s)
    end
  end
  arg_extreme("argmax", true)
  arg_extreme("argmin", false)

  for _, name in ipairs {"real", "imag", "conj", "angle", "asinh", "acosh", "atanh", "arcsin", "arccos", "arctan", "arcsinh",
                         "arccosh", "arctanh", "prod", "max", "min", "argmax", "argmin"} do
    shared.methods[name] = hl[name]
  end
end
