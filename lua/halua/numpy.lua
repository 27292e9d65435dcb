-- NumPy's statistics, composed of primitives so that each traces into pipelines, differentiates
-- and batches like any other op: the NaN-ignoring reductions, median, quantile, percentile, diff,
-- trapezoid and select (searching and counting are in numpy_search.lua).
-- Conventions: axes and returned indices are 1-based; float dtypes are kept (float16/bfloat16
-- compute in float32 and round once); integer inputs of a mean-like result give float32, as hl.mean.
-- shared: init.lua's helpers {as_array, norm_axis, norm_axes, named, methods}.
return function(hl, core, shared)
  local util = require "halua.util"
  local fail, as_array, norm_axis, norm_axes = util.fail, shared.as_array, shared.norm_axis, shared.norm_axes
  local P = core.prims
  local is_array, is_tracer = core.is_array, core.is_tracer
  local shape_str = util.shape_str

  local is_float, is_half, is_intv = util.is_full_float, util.is_half, util.is_integer
  local is_opts = util.is_options

  local back = util.back
  local function is_complex(x) return x.dtype == "complex64" or x.dtype == "complex128" end
  -- complex arrays compute as they are (the other dtypes as util.floated says)
  local function floated(x)
    if is_complex(x) then return x, nil end
    return util.floated(x)
  end
  -- hl.isnan: the primitive's isnan does not take complex values (NaN in either part counts)
  local function isnan(x) return is_complex(x) and hl.isnan(x) or P.isnan(x) end

  -- the constant v like x (on x's device, or in x's trace)
  local function const(x, v, dtype) return hl.fill_like(x, v, {}, dtype or x.dtype) end

  ---------------------------------------------------------------- NaN-ignoring reductions

  -- (x, axes, keepdims, ddof) from positional arguments or a trailing options table
  -- {axis =, keepdims =, ddof =} (ddof only where `names` lists it)
  local function nan_args(op, x, axes, keepdims, ddof, names)
    x = as_array(x, op)
    local opts
    if is_opts(axes) then opts, axes = axes, nil
    elseif is_opts(keepdims) then opts, keepdims = keepdims, nil
    elseif is_opts(ddof) then opts, ddof = ddof, nil end
    if type(axes) == "boolean" then axes, keepdims, ddof = nil, axes, keepdims end
    if names and type(keepdims) == "number" then keepdims, ddof = nil, keepdims end
    if opts then
      util.options(op, opts, names or {"axis", "keepdims"}, "{axis = 1, keepdims = true}")
      if opts.axis ~= nil then axes = opts.axis end
      if opts.keepdims ~= nil then keepdims = opts.keepdims end
      if opts.ddof ~= nil then ddof = opts.ddof end
    end
    return x, axes, keepdims, ddof
  end
  local function has_nan(x) return util.is_float(x.dtype) or is_complex(x) end   -- (any float or complex dtype)

  function hl.nansum(x, axes, keepdims)
    x, axes, keepdims = nan_args("nansum", x, axes, keepdims)
    if has_nan(x) then x = hl.where(isnan(x), const(x, 0), x) end
    return hl.sum(x, axes, keepdims)
  end

  -- the count of non-NaN elements (float) and their sum, over the axes
  local function count_sum(x, axes, keepdims)
    local ok = P.logical_not(isnan(x))
    return hl.sum(ok:astype(x.dtype), axes, keepdims), hl.sum(hl.where(ok, x, const(x, 0)), axes, keepdims), ok
  end

  -- NumPy warns and gives NaN for an all-NaN slice; halua gives the NaN without a warning
  function hl.nanmean(x, axes, keepdims)
    x, axes, keepdims = nan_args("nanmean", x, axes, keepdims)
    local dt
    x, dt = floated(x)
    local n, s = count_sum(x, axes, keepdims)
    return back(s / n, dt)
  end

  -- hl.max and hl.min are looked up at each call: complex.lua wraps them after this file loads.
  -- A NaN becomes the identity, for complex values -inf - inf i or inf + inf i, below or above
  -- everything in NumPy's order (as -inf alone is not: -inf - 5i is below -inf + 0i)
  local function nan_extreme(op, name, fill)
    return function(x, axes, keepdims)
      x, axes, keepdims = nan_args(op, x, axes, keepdims)
      local reduce = hl[name]
      if not has_nan(x) then return reduce(x, axes, keepdims) end
      local nan = isnan(x)
      local p = is_complex(x) and hl.real(x)
      local id = p and hl.complex(const(p, fill), const(p, fill)) or const(x, fill)
      local r = reduce(hl.where(nan, id, x), axes, keepdims)
      -- an all-NaN slice gives NaN (NumPy's value; NumPy also warns, halua does not); a complex
      -- one its first element, as NumPy's fmax.reduce (hl.max returns a slice's first NaN)
      local fallback = p and reduce(x, axes, keepdims) or const(r, 0 / 0)
      return hl.where(hl.all(nan, axes, keepdims), fallback, r)
    end
  end
  hl.nanmax = nan_extreme("nanmax", "max", -math.huge)
  hl.nanmin = nan_extreme("nanmin", "min", math.huge)

  -- nanvar(x [, axes] [, keepdims] [, ddof] [, opts]): the variance of the non-NaN elements divided by
  -- count - ddof; NaN where that is not positive (as NumPy, without its warning)
  local var_names = {"axis", "keepdims", "ddof"}
  function hl.nanvar(x, axes, keepdims, ddof)
    x, axes, keepdims, ddof = nan_args("nanvar", x, axes, keepdims, ddof, var_names)
    ddof = ddof or 0
    if type(ddof) ~= "number" then fail("nanvar: ddof must be a number, got %s", type(ddof)) end
    local dt
    x, dt = floated(x)
    local n, s, ok = count_sum(x, axes, true)
    local d = hl.where(ok, x - s / n, const(x, 0))
    local ss
    if is_complex(x) then
      -- NumPy's variance of complex values: the mean of |x - mean|^2, a real array
      local re, im = hl.real(d), hl.imag(d)
      ss, n = hl.sum(re * re + im * im, axes, keepdims), hl.real(n)
    else
      ss = hl.sum(d * d, axes, keepdims)
    end
    if not keepdims then n = hl.reshape(n, ss.shape) end
    local dof = n - ddof
    local bad = hl.le(dof, 0)
    -- the unchosen branch divides by 1, not 0, so its zero cotangent stays zero
    return back(hl.where(bad, const(ss, 0 / 0), ss / hl.where(bad, const(dof, 1), dof)), dt)
  end
  function hl.nanstd(x, axes, keepdims, ddof)
    x, axes, keepdims, ddof = nan_args("nanstd", x, axes, keepdims, ddof, var_names)
    local dt
    if is_half(x.dtype) then x, dt = x:astype("float32"), x.dtype end
    return back(hl.sqrt(hl.nanvar(x, axes, keepdims, ddof)), dt)
  end

  ---------------------------------------------------------------- quantiles

  local function slice_axis(x, a, from, count) return util.slice_axis(core, x, a, from, count) end

  -- x's axes `axes` (nil: all) moved last and merged into one lane axis; also the shape of the
  -- other axes and x's shape with the lane axes kept as 1 (for keepdims)
  local function lanes(op, x, axes)
    local ax = norm_axes(op, axes, x.ndim)
    local in_ax, perm, kept, keep, len = {}, {}, {}, x.shape, 1
    for _, a in ipairs(ax) do in_ax[a] = true end
    for d = 0, x.ndim - 1 do
      if not in_ax[d] then perm[#perm + 1], kept[#kept + 1] = d + 1, x.shape[d + 1] end
    end
    for _, a in ipairs(ax) do perm[#perm + 1], len, keep[a + 1] = a + 1, len * x.shape[a + 1], 1 end
    local lane_shape = {unpack(kept)}
    lane_shape[#lane_shape + 1] = len
    if x.ndim == 0 then return hl.reshape(x, {1}), kept, keep, 1 end
    return hl.reshape(hl.transpose(x, perm), lane_shape), kept, keep, len
  end

  local methods_q = {linear = true, lower = true, higher = true, nearest = true, midpoint = true}

  -- v rounded half to even (NumPy's around), v >= 0
  local function round_even(v)
    local r = hl.floor(v + 0.5)
    local tie = hl.eq(r - v, 0.5)
    local odd = hl.eq(r - hl.floor(r / 2) * 2, 1)
    return hl.where(hl.logical_and(tie, odd), r - 1, r)
  end

  -- the q-th quantiles (q in [0, scale]) of x over axes; q's axes come first in the result
  local function quantile(op, scale, x, q, axes, keepdims, method)
    x = as_array(x, op)
    local opts
    if is_opts(axes) then opts, axes = axes, nil
    elseif is_opts(keepdims) then opts, keepdims = keepdims, nil
    elseif type(keepdims) == "string" then method, keepdims = keepdims, nil
    elseif is_opts(method) then opts, method = method, nil end
    if type(axes) == "boolean" then axes, keepdims = nil, axes end
    if opts then
      util.options(op, opts, {"axis", "keepdims", "method"}, "{axis = 1, method = \"lower\"}")
      if opts.axis ~= nil then axes = opts.axis end
      if opts.keepdims ~= nil then keepdims = opts.keepdims end
      if opts.method ~= nil then method = opts.method end
    end
    method = method or "linear"
    if not methods_q[method] then
      fail("%s: unknown method '%s' (the methods are linear, lower, higher, nearest, midpoint)", op, tostring(method))
    end
    if type(q) ~= "number" and not is_array(q) then
      if type(q) == "table" then q = hl.array(q, "float64") else core.arg_error(op, 2, q, "a number or an array") end
    end
    local dt
    x, dt = floated(x)
    local lane, kept, keep, n = lanes(op, x, axes)
    if n == 0 then fail("%s: cannot take a quantile over an empty axis (shape %s)", op, shape_str(x.shape)) end
    local qa = type(q) == "number" and hl.array(q, "float64") or q
    if not is_tracer(qa) and qa.size > 0 then
      local lo, hi = hl.min(qa):item(), hl.max(qa):item()
      if not (lo >= 0 and hi <= scale) then
        fail("%s: q must be in [0, %g], got %g", op, scale, (lo >= 0) and hi or lo)
      end
    end
    if not is_float(qa.dtype) then qa = qa:astype("float64") end
    -- the virtual index as NumPy rounds it: q / 100 first (percentile), then times n - 1
    local v = qa:astype("float64")
    if scale ~= 1 then v = v / scale end
    v = v * (n - 1)
    local lo_i, hi_i, t
    if method == "nearest" then
      lo_i = round_even(v)
      hi_i, t = lo_i, nil
    else
      lo_i = hl.floor(v)
      hi_i = hl.minimum(lo_i + 1, n - 1)
      if method == "lower" then hi_i, t = lo_i, nil
      elseif method == "higher" then lo_i, hi_i, t = hl.ceil(v), nil, nil
      elseif method == "midpoint" then t = hl.where(hl.eq(v, lo_i), 0, const(v, 0.5))
      else t = v - lo_i end
    end
    local s = hl.sort(lane, -1)
    local last = lane.ndim - 1
    local a = core.gather(s, lo_i:astype("int64"), last)
    local r = a
    if t then
      local b = core.gather(s, hi_i:astype("int64"), last)
      -- (a complex lane interpolates each part with the real weight)
      t = t:astype(({complex64 = "float32", complex128 = "float64"})[x.dtype] or x.dtype)
      local d = b - a
      -- NumPy's lerp: from the nearer end, so t = 1 gives b exactly
      r = hl.where(hl.ge(t, 0.5), b - d * (1 - t), a + d * t)
      -- median is NumPy's mean of the middle one or two values, not the midpoint lerp: the
      -- middle values 1 and inf give inf there, where the lerp's inf - inf * 0.5 is NaN
      if op == "median" then r = hl.where(hl.eq(t, 0), a, (a + b) / 2) end
    end
    -- NaN sorts last: a lane with a NaN has a NaN quantile (as NumPy's quantile and median)
    local qs = qa.shape
    local nan_shape = {unpack(kept)}
    for _ = 1, #qs do nan_shape[#nan_shape + 1] = 1 end
    local nanlane = hl.reshape(isnan(slice_axis(s, last, n - 1, 1)), nan_shape)
    r = hl.where(nanlane, const(r, 0 / 0), r)
    -- q's axes first, then the kept axes (or x's shape with the lane axes as 1)
    if #qs > 0 and #kept > 0 then
      local perm = {}
      for i = 1, #qs do perm[i] = #kept + i end
      for i = 1, #kept do perm[#qs + i] = i end
      r = hl.transpose(r, perm)
    end
    if keepdims then
      local sh = {unpack(qs)}
      for _, e in ipairs(keep) do sh[#sh + 1] = e end
      r = hl.reshape(r, sh)
    end
    return back(r, dt)
  end

  function hl.quantile(x, q, axes, keepdims, method) return quantile("quantile", 1, x, q, axes, keepdims, method) end
  function hl.percentile(x, q, axes, keepdims, method) return quantile("percentile", 100, x, q, axes, keepdims, method) end
  -- the middle value, or the mean of the two middle values (NaN for a lane with a NaN)
  function hl.median(x, axes, keepdims)
    if is_opts(axes) or is_opts(keepdims) then
      local o = is_opts(axes) and axes or keepdims
      util.options("median", o, {"axis", "keepdims"}, "{axis = 1}")
    end
    return quantile("median", 1, x, 0.5, axes, keepdims, "midpoint")
  end

  ---------------------------------------------------------------- differences and integrals

  -- an array or number to concatenate along axis a (0-based) of x: numbers and arrays lacking
  -- that axis are broadcast to x's shape with extent 1 there (NumPy's prepend/append)
  local function edge_piece(op, x, v, a)
    if not is_array(v) then v = hl.asarray(v, x.dtype) end
    local s = x.shape
    if v.ndim == x.ndim then
      local ok, r = pcall(function()
        local t = v.shape
        t[a + 1] = s[a + 1]
        s[a + 1] = v.shape[a + 1]
        return hl.broadcast_to(v, s)
      end)
      if not ok then fail("%s: prepend/append of shape %s does not fit %s off axis %d", op, shape_str(v.shape), shape_str(x.shape), a + 1) end
      return r
    end
    s[a + 1] = 1
    local ok, r = pcall(hl.broadcast_to, v, s)
    if not ok then fail("%s: prepend/append of shape %s does not broadcast to %s", op, shape_str(v.shape), shape_str(s)) end
    return r
  end

  -- diff(x [, n] [, axis] [, {prepend =, append =}]): the n-th forward difference along axis
  -- (default the last); bool arrays give x[i+1] ~= x[i], as NumPy
  function hl.diff(x, n, axis, opts)
    x = as_array(x, "diff")
    if is_opts(n) then opts, n = n, nil elseif is_opts(axis) then opts, axis = axis, nil end
    opts = util.options("diff", opts, {"n", "axis", "prepend", "append"}, "{prepend = 0}")
    n, axis = n or opts.n or 1, axis or opts.axis or -1
    if not is_intv(n) or n < 0 then fail("diff: n must be a non-negative integer, got %s", tostring(n)) end
    -- n = 0 gives x itself, before prepend/append and for a 0-d x too (NumPy returns there first)
    if n == 0 then return x end
    if x.ndim == 0 then fail("diff: needs at least one axis, got a 0-d array") end
    local a = norm_axis("diff", axis, x.ndim)
    if opts.prepend ~= nil or opts.append ~= nil then
      local parts = {}
      if opts.prepend ~= nil then parts[#parts + 1] = edge_piece("diff", x, opts.prepend, a) end
      parts[#parts + 1] = x
      if opts.append ~= nil then parts[#parts + 1] = edge_piece("diff", x, opts.append, a) end
      x = hl.concatenate(parts, a + 1)
    end
    for _ = 1, n do
      local len = x.shape[a + 1]
      if len == 0 then break end
      local hi, lo = slice_axis(x, a, 1, len - 1), slice_axis(x, a, 0, len - 1)
      x = x.dtype == "bool" and hl.ne(hi, lo) or hi - lo
    end
    return x
  end

  -- trapezoid(y [, x] [, dx] [, axis]) or trapezoid(y, {x =, dx =, axis =}): the trapezoidal rule
  -- along axis (default the last); x is 1-D (one coordinate per element of that axis) or y's shape
  function hl.trapezoid(y, x, dx, axis)
    y = as_array(y, "trapezoid")
    if is_opts(x) then
      local o = util.options("trapezoid", x, {"x", "dx", "axis"}, "{dx = 0.1}")
      x, dx, axis = o.x, o.dx, o.axis
    end
    if type(x) == "number" then x, dx, axis = nil, x, dx end
    if y.ndim == 0 then fail("trapezoid: needs at least one axis, got a 0-d array") end
    local a = norm_axis("trapezoid", axis or -1, y.ndim)
    local dt
    y, dt = floated(y)
    local len = y.shape[a + 1]
    local d
    if x ~= nil then
      if type(x) == "table" and not is_array(x) then x = hl.array(x, y.dtype) end
      x = as_array(x, "trapezoid", 2)
      if x.ndim == 1 then
        if x.shape[1] ~= len then
          fail("trapezoid: x has %d coordinates, y's axis %d has %d elements", x.shape[1], a + 1, len)
        end
        local s = {}
        for i = 1, y.ndim do s[i] = 1 end
        s[a + 1] = len
        x = hl.reshape(x, s)
      end
      if not is_float(x.dtype) then x = x:astype(y.dtype) end
      d = hl.diff(x, 1, a + 1)
    else
      d = dx or 1
      if type(d) ~= "number" and not is_array(d) then fail("trapezoid: dx must be a number, got %s", type(d)) end
    end
    if len == 0 then return back(hl.sum(slice_axis(y, a, 0, 0), a + 1), dt) end
    local s = d * (slice_axis(y, a, 1, len - 1) + slice_axis(y, a, 0, len - 1)) / 2
    return back(hl.sum(s, a + 1), dt)
  end

  -- select(condlist, choicelist [, default]): per element, the choice of the first true condition
  function hl.select(conds, choices, default)
    if type(conds) ~= "table" or is_array(conds) or type(choices) ~= "table" or is_array(choices) then
      fail("select: condlist and choicelist must be Lua lists of arrays")
    end
    if #conds == 0 then fail("select: condlist is empty; give at least one condition and its choice") end
    if #conds ~= #choices then
      fail("select: condlist has %d entries and choicelist %d; they must have the same length", #conds, #choices)
    end
    local r = default or 0
    for i = #conds, 1, -1 do
      local c = conds[i]
      if type(c) == "boolean" then c = hl.array(c) end
      c = as_array(c, "select")
      if c.dtype ~= "bool" then
        fail("select: condition %d is %s; conditions must be bool arrays (compare first, e.g. hl.gt(x, 0))", i, c.dtype)
      end
      r = hl.where(c, choices[i], r)
    end
    if not is_array(r) then r = hl.asarray(r) end
    return r
  end

  local names = {"nansum", "nanmean", "nanmax", "nanmin", "nanvar", "nanstd", "quantile", "percentile", "median",
                 "diff", "trapezoid", "select"}
  for _, name in ipairs(names) do hl[name] = shared.named(name, hl[name]) end
  for _, name in ipairs {"nansum", "nanmean", "nanmax", "nanmin", "nanvar", "nanstd", "quantile", "percentile",
                         "median", "diff"} do
    shared.methods[name] = hl[name]
  end
end
