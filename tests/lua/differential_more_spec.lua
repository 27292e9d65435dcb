-- The differential suite, continued (differential_spec.lua has the core ops and the conventions):
-- NumPy's statistics and searching, its arrangement and products, hl.fft and hl.linalg against
-- NumPy, on random shapes (zero-size and size-1 axes, negative axes), the dtypes each function
-- takes, NaN, inf and -0.0 mixed into float inputs where the function defines what they give;
-- each case eagerly and, bundled per group and dtype, under hl.jit. Seeded: the same cases
-- every run. The machinery is support/differential.lua.
--
-- Dtypes, as halua documents them (docs/api.md, hl.help, lua/halua/numpy.lua's header):
-- * nansum follows sum (bool, uint8, int8 give int32); nanmax and nanmin keep the dtype.
-- * the mean-like results (nanmean nanvar nanstd median quantile percentile trapezoid interp)
--   take integers and bool to float32; float16 and bfloat16 compute in float32 and round once.
--   NumPy computes them in float64 here (quantile's inputs cast to the dtype halua computes in
--   first) and the result is rounded to halua's dtype, so the tolerance is the accumulation's.
-- * diff keeps the dtype (bool gives x[i+1] ~= x[i]); roll rot90 tril triu pad are exact.
-- * tensordot kron follow matmul and mul; cross, convolve and correlate take bool to int32.
-- * hl.fft: real input becomes complex64 (complex128 from float64); NumPy transforms in
--   complex128. The tolerance is log2(N) * eps * max|x| * N (times the norm's scale), N the
--   product of the transformed lengths: a bound on the rounding of a length-N FFT's output.
-- * hl.linalg takes float32 and float64; NumPy computes in float64, and the matrices are made
--   well-conditioned (n * I added) where the comparison depends on the condition.
local hl = require "halua"
local np = require "support.numpy"
local D = require "support.differential"
local DTYPES, INTS, FLOAT, EPS, NPT, rint = D.DTYPES, D.INTS, D.FLOAT, D.EPS, D.NPT, D.rint
local pick, rand_index, size, sname, copy, rand_shape = D.pick, D.rand_index, D.size, D.sname, D.copy, D.rand_shape
local value, arr, cast, wrap, npax, npaxes = D.value, D.arr, D.cast, D.wrap, D.npax, D.npaxes
local pylist, max_abs, promote, group, rand_axes = D.pylist, D.max_abs, D.promote, D.group, D.rand_axes
local reduced_count, axes_name = D.reduced_count, D.axes_name

math.randomseed(20250301)

local SMALL_INT = {bool = true, uint8 = true, int8 = true}
-- the dtype a mean-like result has (and halua computes in, but for the 2-byte floats: float32)
local function floated(dt) return FLOAT[dt] and dt or "float32" end
local function compute(dt) return (dt == "float32" or dt == "float64") and dt or "float32" end
local function kd(keep) return keep and "True" or "False" end

-- the tolerance of a float result of dtype rdt that accumulates n terms of magnitude m in the
-- dtype halua computes in (float32 for the 2-byte floats)
local function acc_opts(rdt, n, m, extra)
  local o = extra or {}
  o.dtype = rdt
  if FLOAT[rdt] then
    local tol = np.tolerance[rdt]
    o.rtol = (o.rtol or 0) + tol[1]
    o.atol = (o.atol or 0) + tol[2] + 2 * math.max(n, 1) * EPS[compute(rdt)] * m
  end
  return o
end

-- ---------------------------------------------------------------- statistics and searching

local NAN_OPS = {"nansum", "nanmean", "nanmax", "nanmin", "nanvar", "nanstd"}

group("NumPy's NaN-ignoring reductions, median, quantile, percentile, every dtype", function(add)
  for _, dt in ipairs(DTYPES) do
    local jit = "stats " .. dt
    for _, op in ipairs(NAN_OPS) do
      for k = 1, 2 do
        local shape = rand_shape()
        local axes = rand_axes(#shape)
        local keep = math.random() < 0.4
        -- floats: NaN in a third of the elements, so that some slices are all NaN
        local x = arr(shape, dt)
        if FLOAT[dt] and x.size > 0 then
          x = hl.where(hl.lt(arr(shape, "float32", {0, 1}), 0.33), hl.full(shape, 0 / 0, dt), x)
        end
        local n = reduced_count(shape, axes)
        local ax = npaxes(axes)
        local ddof = (op == "nanvar" or op == "nanstd") and k == 2 and 1 or nil
        local f, expr, opts
        if op == "nansum" then
          local rdt = SMALL_INT[dt] and "int32" or dt
          expr = FLOAT[dt] and wrap(string.format("np.nansum(a.astype(np.float64), axis=%s, keepdims=%s)", ax, kd(keep)), dt)
                 or string.format("np.sum(a, axis=%s, keepdims=%s, dtype=%s)", ax, kd(keep), NPT[rdt])
          opts = acc_opts(rdt, n, max_abs(x))
        elseif op == "nanmax" or op == "nanmin" then
          expr = wrap(string.format("np.%s(a, axis=%s, keepdims=%s)", op, ax, kd(keep)), dt)
          opts = {dtype = dt}
        else
          local rdt = floated(dt)
          local m = max_abs(x)
          local args = string.format("%s.astype(np.float64), axis=%s, keepdims=%s", cast("a", dt, rdt), ax, kd(keep))
          if ddof then args = args .. ", ddof=" .. ddof end
          expr = wrap(string.format("np.%s(%s)", op, args), rdt)
          if op == "nanmean" then opts = acc_opts(rdt, n, m)
          elseif op == "nanvar" then opts = acc_opts(rdt, n, m * m)
          else
            opts = acc_opts(rdt, n, 0)
            opts.atol = opts.atol + math.sqrt(2 * n * EPS[compute(rdt)]) * m
          end
        end
        f = function(a) return hl[op](a, axes, keep, ddof) end
        if ddof == nil then f = function(a) return hl[op](a, axes, keep) end end
        -- NumPy refuses nanmax/nanmin over nothing; halua must refuse too
        local fails = (op == "nanmax" or op == "nanmin") and n == 0
        add {name = string.format("%s %s%s axes %s%s%s", op, dt, sname(shape), axes_name(axes), keep and " keepdims" or "",
                                  ddof and " ddof 1" or ""),
             f = f, inputs = {x}, expr = expr, opts = opts, fails = fails, jit = k == 1 and not fails and jit}
      end
    end
    -- median and quantiles: in float64 from the values halua computes with; no empty lanes
    -- (NumPy and halua refuse them)
    local METHODS = {"linear", "lower", "higher", "nearest", "midpoint"}
    for k = 1, 7 do
      local shape = rand_shape(4)
      for i = 1, #shape do if shape[i] == 0 then shape[i] = 2 end end
      local axes = rand_axes(#shape)
      local keep = math.random() < 0.3
      local x = arr(shape, dt, k % 3 == 0 and "small" or nil)   -- "small": ties
      local rdt, c = floated(dt), compute(dt)
      local a64 = cast("a", dt, c) .. ".astype(np.float64)"
      local op = k == 1 and "median" or (k % 2 == 0 and "quantile" or "percentile")
      local method = METHODS[(k - 1) % 5 + 1]
      local scale = op == "percentile" and 100 or 1
      local q, qexpr, inputs, f
      if op == "median" then
        f = function(a) return hl.median(a, axes, keep) end
        qexpr, inputs = string.format("np.median(%s, axis=%s, keepdims=%s)", a64, npaxes(axes), kd(keep)), {x}
      else
        -- a number, or an array of q with the ties of 'nearest' (q (n - 1) = k + 0.5) among them
        if math.random() < 0.5 then
          q = pick {0, 1, 0.5, 0.25, math.random()} * scale
        else
          local qs = {0, 0.5, math.random(), 1, 0.25}
          for i = 1, #qs do qs[i] = qs[i] * scale end
          q = hl.reshape(hl.array(qs, "float64"), math.random() < 0.5 and {5} or {5, 1})
        end
        local qq = q
        f = function(a, b) return hl[op](a, b or qq, axes, keep, method) end
        local qa = type(q) == "number" and string.format("%.17g", q) or "b"
        qexpr = string.format("np.%s(%s, %s, axis=%s, keepdims=%s, method=%q)", op, a64, qa, npaxes(axes), kd(keep), method)
        inputs = type(q) == "number" and {x} or {x, q}
      end
      -- halua interpolates in c; NumPy in float64
      local opts = acc_opts(rdt, 2, max_abs(x))
      add {name = string.format("%s %s%s axes %s%s %s q %s", op, dt, sname(shape), axes_name(axes), keep and " keepdims" or "",
                                op == "median" and "" or method, type(q) == "table" and sname(q.shape) or tostring(q)),
           f = f, inputs = inputs, expr = wrap(qexpr, rdt), opts = opts, jit = k <= 3 and jit}
    end
  end
end)

group("diff, trapezoid, searchsorted, interp, every dtype", function(add)
  for _, dt in ipairs(DTYPES) do
    local jit = "search " .. dt
    -- diff: n 0..3 along a random axis (either sign), sometimes with prepend/append numbers
    for k = 1, 3 do
      local shape = rand_shape(4, 1)
      local axis = math.random() < 0.3 and nil or rand_index(#shape)
      local n = rint(0, 3)
      local x = arr(shape, dt)
      local opts, npo = nil, ""
      if k == 3 then
        local p = dt == "bool" and 1 or dt == "uint8" and rint(0, 3) or value(dt, "small")
        opts, npo = {prepend = p, append = p}, string.format(", prepend=%s(%d), append=%s(%d)", NPT[dt], p, NPT[dt], p)
      end
      local f = function(a) return hl.diff(a, n, axis, opts) end
      if opts == nil then f = function(a) return hl.diff(a, n, axis) end end
      local e = string.format("np.diff(a, n=%d, axis=%s%s)", n, axis and npax(axis) or -1, npo)
      if dt == "bfloat16" and n >= 2 then
        -- each difference rounds to bfloat16 in halua, as each subtraction does; NumPy's float32
        -- values round once: one difference at a time, each rounded
        e = "a"
        for i = 1, n do
          e = string.format("bf16(np.diff(%s, axis=%s%s)).values", e, axis and npax(axis) or -1, i == 1 and npo or "")
        end
      end
      add {name = string.format("diff %s%s n %d axis %s%s", dt, sname(shape), n, tostring(axis), opts and " prepend/append" or ""),
           f = f, inputs = {x}, expr = wrap(e, dt),
           opts = {dtype = dt}, jit = k == 1 and jit}
    end
    -- trapezoid with dx or with coordinates x (increasing, any spacing)
    for k = 1, 2 do
      local shape = rand_shape(4, 1)
      local axis = rand_index(#shape)
      local len = shape[npax(axis) % #shape + 1]
      local y = arr(shape, dt)
      local rdt, c = floated(dt), compute(dt)
      local m = max_abs(y)
      if k == 1 then
        local dx = pick {1, 0.5, 2.25}
        add {name = string.format("trapezoid %s%s dx %g axis %d", dt, sname(shape), dx, axis),
             f = function(a) return hl.trapezoid(a, dx, axis) end, inputs = {y},
             expr = wrap(string.format("np.trapz(%s.astype(np.float64), dx=%g, axis=%d)", cast("a", dt, c), dx, npax(axis)), rdt),
             opts = acc_opts(rdt, len, 3 * m), jit = jit}
      else
        local xs = {}
        local at = 0
        for i = 1, len do at = at + math.random() * 2; xs[i] = at end
        local xc = len > 0 and hl.array(xs, c) or hl.zeros({0}, c)
        add {name = string.format("trapezoid %s%s x %s axis %d", dt, sname(shape), sname(xc.shape), axis),
             f = function(a, b) return hl.trapezoid(a, b, nil, axis) end, inputs = {y, xc},
             expr = wrap(string.format("np.trapz(%s.astype(np.float64), x=b.astype(np.float64), axis=%d)", cast("a", dt, c),
                                       npax(axis)), rdt),
             opts = acc_opts(rdt, len, 4 * m), jit = jit}
      end
    end
    -- searchsorted into a sorted a (NaN last, as hl.sort leaves it), v of any shape and
    -- sometimes another dtype; both sides
    for k = 1, 3 do
      local a = hl.sort(arr({rint(0, 9)}, dt, k == 3 and "small" or nil))
      local dv = k == 2 and pick(DTYPES) or dt
      local v = arr(rand_shape(3), dv, k == 3 and (dv == "uint8" and {0, 3} or "small") or nil)
      local side = k == 1 and nil or pick {"left", "right"}
      local t = promote(dt, dv)
      add {name = string.format("searchsorted %s%s %s%s side %s", dt, sname(a.shape), dv, sname(v.shape), tostring(side)),
           f = function(p, q) return hl.searchsorted(p, q, side) end, inputs = {a, v},
           expr = string.format("np.searchsorted(%s, %s, side=%q) + 1", cast("a", dt, t), cast("b", dv, t), side or "left"),
           opts = {dtype = "int64"}, jit = k == 1 and jit}
    end
    -- interp: xp strictly increasing and finite, fp finite; x with NaN and infinities
    for k = 1, 2 do
      local n = rint(1, 7)
      local xs, fs, at = {}, {}, -5
      for i = 1, n do
        at = at + (FLOAT[dt] and 0.25 + math.random() * 2 or rint(1, 3))
        xs[i], fs[i] = at, value(dt, "finite")
      end
      if dt == "uint8" then for i = 1, n do xs[i] = xs[i] + 5 end end
      if dt == "bool" then n, xs, fs = 2, {0, 1}, {math.random() < 0.5, true} end
      if dt == "int8" or dt == "uint8" then for i = 1, n do fs[i] = value(dt, "small") end end
      local xp, fp = hl.array(xs, dt), hl.array(fs, dt)
      local x = arr(rand_shape(3), dt, dt == "uint8" and {0, 20} or (not FLOAT[dt] and dt ~= "bool") and {-8, 12} or nil)
      local rdt, c = floated(dt), compute(dt)
      local lr = k == 2 and {-7, 9} or nil
      local f = lr and function(p, q, r) return hl.interp(p, q, r, lr[1], lr[2]) end or hl.interp
      local e = string.format("np.interp(%s.astype(np.float64), %s.astype(np.float64), %s.astype(np.float64)%s)",
                              cast("a", dt, c), cast("b", dt, c), cast("c", dt, c), lr and ", left=-7, right=9" or "")
      -- halua interpolates in c: a few roundings of values up to max |fp| and slopes times spans
      add {name = string.format("interp %s%s xp %d points%s", dt, sname(x.shape), n, lr and " left/right" or ""),
           f = f, inputs = {x, xp, fp}, expr = wrap(e, rdt), opts = acc_opts(rdt, 8, max_abs(fp) + 1), jit = k == 1 and jit}
    end
  end
end)

-- ---------------------------------------------------------------- arrangement and products

local PAD_MODES = {"constant", "edge", "reflect", "symmetric", "wrap"}

group("roll, rot90, tril, triu, pad (each mode), every dtype (exact)", function(add)
  for di, dt in ipairs(DTYPES) do
    -- data movement compiles slowly under jit: a few cases per dtype, in one bundle
    local jit = "arrange " .. dt
    for k = 1, 2 do
      local x = arr(rand_shape(), dt)
      local shift, axis, npx
      if x.ndim == 0 or k == 1 and math.random() < 0.5 then
        shift, npx = rint(-7, 7), "None"
      elseif math.random() < 0.5 then
        axis, shift = rand_index(x.ndim), rint(-7, 7)
        npx = tostring(npax(axis))
      else
        axis, shift = {rand_index(x.ndim), rand_index(x.ndim)}, {rint(-5, 5), rint(-5, 5)}
        npx = npaxes(axis)
      end
      local sh = type(shift) == "table" and pylist(shift) or tostring(shift)
      add {name = string.format("roll %s%s by %s axis %s", dt, sname(x.shape), sh, type(axis) == "table" and axes_name(axis) or tostring(axis)),
           f = function(a) return hl.roll(a, shift, axis) end, inputs = {x},
           expr = wrap(string.format("np.roll(a, %s, axis=%s)", sh, npx), dt), opts = {dtype = dt, signed_zero = true},
           jit = k == 1 and di % 3 == 0 and jit}
    end
    do
      local x = arr(rand_shape(4, 2), dt)
      local kk = rint(-3, 5)
      local a1 = rint(1, x.ndim)
      local a2 = a1
      while a2 == a1 do a2 = rint(1, x.ndim) end
      local axes = {math.random() < 0.5 and a1 or a1 - x.ndim - 1, math.random() < 0.5 and a2 or a2 - x.ndim - 1}
      add {name = string.format("rot90 %s%s k %d axes %s", dt, sname(x.shape), kk, axes_name(axes)),
           f = function(a) return hl.rot90(a, kk, axes) end, inputs = {x},
           expr = wrap(string.format("np.rot90(a, %d, axes=%s)", kk, npaxes(axes)), dt), opts = {dtype = dt, signed_zero = true},
           jit = di % 3 == 1 and jit}
    end
    for _, op in ipairs {"tril", "triu"} do
      local x = arr(rand_shape(4, 1), dt)
      local kk = rint(-3, 3)
      add {name = string.format("%s %s%s k %d", op, dt, sname(x.shape), kk), f = function(a) return hl[op](a, kk) end,
           inputs = {x}, expr = wrap(string.format("np.%s(a, %d)", op, kk), dt), opts = {dtype = dt, signed_zero = true},
           jit = di % 3 == 2 and jit}
    end
    for mi, mode in ipairs(PAD_MODES) do
      local x = arr(rand_shape(3), dt)
      -- widths past the axis length too (the pattern repeats, as NumPy's)
      local width, w
      if x.ndim == 0 or math.random() < 0.3 then
        width = rint(0, 5); w = tostring(width)
      else
        width = {}
        local t = {}
        for i = 1, x.ndim do width[i] = {rint(0, 5), rint(0, 5)}; t[i] = pylist(width[i]) end
        w = pylist(t)
      end
      -- NumPy and halua refuse to extend an empty axis by any mode but constant
      local fails = false
      for i, e in ipairs(x.shape) do
        local wi = type(width) == "number" and {width, width} or width[i]
        if e == 0 and mode ~= "constant" and (wi[1] > 0 or wi[2] > 0) then fails = true end
      end
      local f, e
      if mode == "constant" then
        local v = dt == "bool" and 1 or dt == "uint8" and rint(0, 3) or value(dt, "small")
        f = function(a) return hl.pad(a, width, {mode = "constant", value = v}) end
        e = string.format("np.pad(a, %s, constant_values=%s(%d))", w, NPT[dt], v)
      else
        f = function(a) return hl.pad(a, width, mode) end
        e = string.format("np.pad(a, %s, mode=%q)", w, mode)
        if mode == "wrap" then
          -- NumPy 1.24's wrap is not periodic for widths past the axis length on both sides
          -- (numpy/numpy#22464, fixed by #22575): the periodic extension, axis by axis
          e = "a"
          for i, n in ipairs(x.shape) do
            local wi = type(width) == "number" and {width, width} or width[i]
            if wi[1] > 0 or wi[2] > 0 then
              e = string.format("np.take(%s, np.arange(%d, %d) %% %d, axis=%d)", e, -wi[1], n + wi[2], math.max(n, 1), i - 1)
            end
          end
        end
      end
      add {name = string.format("pad %s %s%s by %s", mode, dt, sname(x.shape), w), f = f, inputs = {x}, expr = wrap(e, dt),
           opts = {dtype = dt, signed_zero = true}, fails = fails, jit = not fails and (mi + di) % 5 == 0 and jit}
    end
  end
end)

-- products: k terms, the tolerance k * eps * max|a| * max|b| (NumPy sums in float64). eps is
-- float32's for the 2-byte floats where halua accumulates in float32 (matmul), and theirs where
-- each product and sum rounds to them (`stepwise`: cross, convolve, correlate)
local function product_opts(rdt, k, a, b, stepwise)
  if not FLOAT[rdt] then return {dtype = rdt} end
  local tol = np.tolerance[rdt]
  local eps = stepwise and EPS[rdt] or EPS[compute(rdt)]
  return {dtype = rdt, rtol = tol[1], atol = tol[2] + 2 * math.max(k, 1) * eps * max_abs(a) * max_abs(b)}
end
-- a random shape, rank 0..maxrank, extents 0..3 (products' results stay small)
local function small_shape(maxrank)
  local s = {}
  for i = 1, rint(0, maxrank) do s[i] = math.random() < 0.08 and 0 or rint(1, 3) end
  return s
end
local function f64(name, dt, t) return FLOAT[t] and cast(name, dt, t) .. ".astype(np.float64)" or cast(name, dt, t) end

group("tensordot, kron, cross, convolve, correlate (each mode), every dtype", function(add)
  for _, dt in ipairs(DTYPES) do
    local jit = "products " .. dt
    -- bool, int8, uint8 products: values 0..2, no wrap-around to tell apart
    local kind = SMALL_INT[dt] and {0, 2} or nil
    for k = 1, 3 do
      -- a's last axes against b's first (a count), or named pairs of axes in any order
      local sa, sb = small_shape(3), small_shape(3)
      local axes, npa
      if k == 1 then
        local c = rint(0, math.min(#sa, #sb, 2))
        for i = 1, c do sb[i] = sa[#sa - c + i] end
        axes, npa = c, tostring(c)
      else
        local c = rint(0, math.min(#sa, #sb, 2))
        local pa, pb = {}, {}
        local ua, ub = {}, {}
        for i = 1, c do
          local x, y
          repeat x = rint(1, #sa) until not ua[x]
          repeat y = rint(1, #sb) until not ub[y]
          ua[x], ub[y] = true, true
          sb[y] = sa[x]
          pa[i] = math.random() < 0.5 and x or x - #sa - 1
          pb[i] = math.random() < 0.5 and y or y - #sb - 1
        end
        axes = {pa, pb}
        local ta, tb = {}, {}
        for i = 1, c do ta[i], tb[i] = npax(pa[i]), npax(pb[i]) end
        npa = "(" .. pylist(ta) .. ", " .. pylist(tb) .. ")"
        if c == 0 then npa = "((), ())" end
      end
      local a, b = arr(sa, dt, kind or "finite"), arr(sb, dt, kind or "finite")
      local kk = 1
      if type(axes) == "number" then for i = 1, axes do kk = kk * sb[i] end
      else for _, y in ipairs(axes[2]) do kk = kk * sb[npax(y) % #sb + 1] end end
      local e = SMALL_INT[dt] and string.format("np.tensordot(a.astype(np.int64), b.astype(np.int64), %s)", npa)
                or wrap(string.format("np.tensordot(%s, %s, %s)", f64("a", dt, dt), f64("b", dt, dt), npa), dt)
      -- (bool, uint8, int8: the values, not the dtype, as einsum in differential_spec)
      add {name = string.format("tensordot %s%s %s axes %s", dt, sname(sa), sname(sb), npa),
           f = function(x, y) return hl.tensordot(x, y, axes) end, inputs = {a, b}, expr = e,
           opts = SMALL_INT[dt] and {dtype = false} or product_opts(dt, kk, a, b), jit = k == 1 and jit}
    end
    do
      local a, b = arr(small_shape(3), dt, kind), arr(small_shape(3), dt, kind)
      add {name = string.format("kron %s%s %s", dt, sname(a.shape), sname(b.shape)), f = hl.kron, inputs = {a, b},
           expr = wrap("np.kron(a, b)", dt), opts = {dtype = dt}, jit = jit}
    end
    -- cross: 2- or 3-vectors along a random axis, the other axes broadcasting; bool computes in int32
    for k = 1, 3 do
      local s = rand_shape(3)
      local at = rint(1, #s + 1)
      local sa, sb = copy(s), D.bcast_partner(s)
      while #sb < #s do table.insert(sb, 1, 1) end
      table.insert(sa, at, rint(2, 3))
      table.insert(sb, at, rint(2, 3))
      local axis = math.random() < 0.5 and at or at - #sa - 1
      local a, b = arr(sa, dt, kind or "finite"), arr(sb, dt, kind or "finite")
      local c = dt == "bool" and "int32" or dt
      add {name = string.format("cross %s%s %s axis %d", dt, sname(sa), sname(sb), axis),
           f = function(x, y) return hl.cross(x, y, axis) end, inputs = {a, b},
           expr = wrap(string.format("np.cross(%s, %s, axis=%d)", f64("a", dt, c), f64("b", dt, c), npax(axis)), c),
           opts = product_opts(c, 2, a, b, true), jit = k == 1 and jit}
    end
    -- convolve and correlate: each mode, either operand the longer; one kernel past 48 taps
    -- (halua's matmul path for long kernels)
    for k = 1, 6 do
      local op = k <= 3 and "convolve" or "correlate"
      local mode = ({"full", "same", "valid"})[(k - 1) % 3 + 1]
      local n, m = rint(1, 9), rint(1, 9)
      if k == 2 then n, m = rint(52, 60), rint(49, 56) end
      local a, v = arr({n}, dt, kind or "finite"), arr({m}, dt, kind or "finite")
      local c = dt == "bool" and "int32" or dt
      add {name = string.format("%s %s %s[%d] [%d]", op, mode, dt, n, m), f = function(x, y) return hl[op](x, y, mode) end,
           inputs = {a, v}, expr = wrap(string.format("np.%s(%s, %s, mode=%q)", op, f64("a", dt, c), f64("b", dt, c), mode), c),
           opts = product_opts(c, math.min(n, m), a, v, true), jit = k % 3 == 1 and jit}
    end
  end
end)

-- ---------------------------------------------------------------- hl.fft

local FFT_DTYPES = {"float32", "float64", "int32", "float16", "complex64", "complex128"}
local COMPLEX = {complex64 = true, complex128 = true}
local NORMS = {"default", "backward", "ortho", "forward"}

-- a shape of rank lo..hi for transforms: extents 1..8, now and then a long, a prime or a
-- Bluestein length on one axis; at most 256 elements
local function fft_shape(lo, hi)
  local s = {}
  for i = 1, rint(lo, hi) do s[i] = rint(1, 8) end
  if math.random() < 0.35 then s[rint(1, #s)] = pick {16, 17, 30, 64, 97} end
  while size(s) > 256 do
    local big = 1
    for i = 2, #s do if s[i] > s[big] then big = i end end
    s[big] = math.floor(s[big] / 2)
  end
  return s
end

-- the transform's input of dtype dt: the halua inputs, the function making the array from them,
-- and the NumPy expression of it (complex ones built as hl.complex(re, im) and re + 1j * im)
local function fft_input(shape, dt)
  if COMPLEX[dt] then
    local ft = dt == "complex64" and "float32" or "float64"
    return {arr(shape, ft, "finite"), arr(shape, ft, "finite")}, function(re, im) return hl.complex(re, im) end, "(a + 1j * b)"
  end
  return {arr(shape, dt, dt == "int32" and {-50, 50} or "finite")}, function(x) return x end,
         "a.astype(np.float64)"
end
local function fft_result(dt) return (dt == "float64" or dt == "complex128") and "complex128" or "complex64" end
local function real_of(ct) return ct == "complex128" and "float64" or "float32" end

-- the rounding bound of a transform: n values (the product of the transformed lengths) of
-- magnitude m, scaled by `scale` (the norm's factors)
local function fft_opts(rdt, n, m, scale)
  local eps = (rdt == "complex128" or rdt == "float64") and EPS.float64 or EPS.float32
  local tol = np.tolerance[rdt]
  return {dtype = rdt, rtol = tol[1], atol = tol[2] + 8 * eps * math.max(1, math.log(n) / math.log(2)) * m * n * scale}
end
local function norm_scale(norm, n, inverse)
  if norm == "ortho" then return 1 / math.sqrt(n) end
  if (norm == "forward") == not inverse then return 1 / n end
  return 1
end
local function npnorm(norm) return norm and string.format(", norm=%q", norm) or "" end

group("hl.fft against numpy.fft: random shapes, axes, lengths, norms, real and complex input", function(add)
  for _, dt in ipairs(FFT_DTYPES) do
    local jit = "fft " .. dt
    local rdt = fft_result(dt)
    -- one axis: fft ifft (any input), rfft (real), irfft (its half spectrum, any input)
    for k, op in ipairs {"fft", "ifft", "rfft", "irfft", "fft", "ifft", "rfft", "irfft"} do
      if not (op == "rfft" and COMPLEX[dt]) then
        local shape = fft_shape(1, 4)
        local axis = rand_index(#shape)
        local len = shape[npax(axis) % #shape + 1]
        local n = math.random() < 0.5 and rint(1, len + 5) or nil
        local norm = NORMS[rint(1, 4)]
        if norm == "default" then norm = nil end
        local inputs, make, npx = fft_input(shape, dt)
        -- irfft's output length: n, or 2 (len - 1), which NumPy and halua refuse when it is 0
        local out = op == "irfft" and (n or 2 * (len - 1)) or (n or len)
        local fails = out < 1
        local scale = norm_scale(norm, math.max(out, 1), op == "ifft" or op == "irfft")
        local res = op == "irfft" and real_of(rdt) or rdt
        local m = max_abs(inputs[1]) + (inputs[2] and max_abs(inputs[2]) or 0)
        add {name = string.format("%s %s%s n %s axis %d norm %s", op, dt, sname(shape), tostring(n), axis, tostring(norm)),
             f = function(...) return hl.fft[op](make(...), n, axis, norm) end, inputs = inputs,
             expr = string.format("np.fft.%s(%s, n=%s, axis=%d%s)", op, npx, n and tostring(n) or "None", npax(axis), npnorm(norm)),
             opts = fft_opts(res, math.max(out, 1), (op == "irfft" and 2 or 1) * m, scale), fails = fails,
             jit = k <= 4 and not fails and jit}
      end
    end
    if COMPLEX[dt] then
      local inputs, make = fft_input({4}, dt)
      add {name = "rfft refuses " .. dt, f = function(...) return hl.fft.rfft(make(...)) end, inputs = inputs,
           refuse = "fft.rfft: takes a real array, got " .. dt}
    end
    -- many axes: fftn ifftn rfftn irfftn over random axes (either sign) with random s, fft2
    for k, op in ipairs {"fftn", "ifftn", "rfftn", "irfftn", "fft2", "fftn", "irfftn"} do
      if not (op == "rfftn" and COMPLEX[dt]) then
        local shape = fft_shape(op == "fft2" and 2 or 1, 4)
        local r = #shape
        local axes, npx_axes
        if op == "fft2" or math.random() < 0.25 then
          axes = nil
        else
          axes = {}
          local used = {}
          for _ = 1, rint(1, r) do
            local a = rint(1, r)
            if not used[a] then used[a] = true; axes[#axes + 1] = math.random() < 0.5 and a or a - r - 1 end
          end
        end
        -- the axes transformed: given, or (NumPy's rule) the last #s with s, all without (fft2: the last two)
        local s
        local nax = axes and #axes or (op == "fft2" and 2 or r)
        if math.random() < 0.5 then
          s = {}
          -- (fft2 takes two lengths for its two axes)
          for i = 1, (axes and #axes or op == "fft2" and 2 or rint(1, nax)) do s[i] = rint(1, 9) end
        end
        local which = {}
        if axes then for i, a in ipairs(axes) do which[i] = npax(a) % r + 1 end
        elseif s then for i = 1, #s do which[i] = r - #s + i end
        else for i = 1, nax do which[i] = r - nax + i end end
        local lens, n = {}, 1
        for i, a in ipairs(which) do lens[i] = s and s[i] or shape[a]; n = n * lens[i] end
        local fails = false
        if op == "irfftn" and not s then
          -- the last output length 2 (m - 1) is 0 when the last axis has one value: refused by both
          local last = 2 * (shape[which[#which]] - 1)
          n = n / shape[which[#which]] * math.max(last, 1)
          fails = last < 1
        end
        local norm = NORMS[rint(1, 4)]
        if norm == "default" then norm = nil end
        local inverse = op == "ifftn" or op == "irfftn"
        local inputs, make, npx = fft_input(shape, dt)
        local res = op == "irfftn" and real_of(rdt) or rdt
        local m = max_abs(inputs[1]) + (inputs[2] and max_abs(inputs[2]) or 0)
        local sarg, aarg = s and pylist(s) or "None", axes and npaxes(axes) or "None"
        if op == "fft2" and not axes then aarg = "(-2, -1)" end
        add {name = string.format("%s %s%s s %s axes %s norm %s", op, dt, sname(shape), s and sname(s) or "nil",
                                  axes and axes_name(axes) or "nil", tostring(norm)),
             f = function(...) return hl.fft[op](make(...), s, axes, norm) end, inputs = inputs,
             expr = string.format("np.fft.%s(%s, s=%s, axes=%s%s)", op, npx, sarg, aarg, npnorm(norm)),
             opts = fft_opts(res, math.max(n, 1), (op == "irfftn" and 2 or 1) * m, norm_scale(norm, math.max(n, 1), inverse)),
             fails = fails, jit = k <= 3 and not fails and jit}
      end
    end
    -- fftshift and ifftshift: exact moves, any dtype, axes nil, one, or a list
    for _, op in ipairs {"fftshift", "ifftshift"} do
      local shape = rand_shape(4, 1)
      local axes = rand_axes(#shape)
      local inputs, make, npx = fft_input(shape, dt)
      if not COMPLEX[dt] then npx = "a" end
      add {name = string.format("%s %s%s axes %s", op, dt, sname(shape), axes_name(axes)),
           f = function(...) return hl.fft[op](make(...), axes) end, inputs = inputs,
           expr = string.format("np.fft.%s(%s, axes=%s)", op, npx, npaxes(axes)),
           opts = {dtype = COMPLEX[dt] and dt or dt, rtol = 0, atol = 0}, jit = jit}
    end
  end
  -- fftfreq and rfftfreq: lengths 1..12, spacings, both dtypes (float32 by default)
  for k = 1, 12 do
    local op = k % 2 == 0 and "fftfreq" or "rfftfreq"
    local n = rint(1, 12)
    local d = pick {false, 1, 0.1, 2.5, -0.5} or nil
    local dtype = pick {false, "float32", "float64"} or nil
    add {name = string.format("%s n %d d %s dtype %s", op, n, tostring(d), tostring(dtype)),
         f = function() return hl.fft[op](n, d, dtype) end, inputs = {},
         expr = wrap(string.format("np.fft.%s(%d, d=%s)", op, n, d and string.format("%.17g", d) or "1.0"), dtype or "float32"),
         opts = {dtype = dtype or "float32"}}
  end
end)

-- ---------------------------------------------------------------- hl.linalg

local function cat(a, b) local t = copy(a) for _, e in ipairs(b) do t[#t + 1] = e end return t end
-- a stack (batch shape) of m x n matrices of dtype dt, entries in [-1, 1], plus max(m, n) on the
-- diagonal when `cond`: singular values at least max(m, n) - sqrt(m n) - ... well away from zero
local function mats(batch, m, n, dt, cond)
  local a = arr(cat(batch, {m, n}), dt, {-1, 1})
  if cond and m > 0 and n > 0 then a = a + (hl.eye(m, n) * (math.max(m, n) + 1)):astype(dt) end
  return a
end
local function lin_eps(dt) return EPS[dt] end
local function pyord(o)
  if o == nil then return "None" end
  if o == math.huge then return "np.inf" end
  if o == -math.huge then return "-np.inf" end
  if type(o) == "string" then return string.format("%q", o) end
  return tostring(o)
end

group("hl.linalg against numpy.linalg: random batches (empty ones too), float32 and float64", function(add)
  for _, dt in ipairs {"float32", "float64"} do
    local jit = "linalg " .. dt
    local eps = lin_eps(dt)
    local function a64(name) return name .. ".astype(np.float64)" end
    -- an empty batch: [0, b] or [b, 0]
    local function empty_batch() return math.random() < 0.5 and {0, rint(1, 2)} or {rint(1, 2), 0} end
    for k = 1, 3 do
      local batch, n = k == 3 and empty_batch() or small_shape(2), rint(1, 4)
      -- det and slogdet: rows of a well-conditioned matrix negated at random (either sign)
      local a = mats(batch, n, n, dt, true)
      local flip = hl.where(hl.lt(arr(cat(batch, {n, 1}), dt, {-1, 1}), 0), -1, 1):astype(dt)
      a = a * flip
      local opts = {dtype = dt, rtol = 16 * n * eps, atol = np.tolerance[dt][2]}
      add {name = string.format("det %s%s", dt, sname(a.shape)), f = hl.linalg.det, inputs = {a},
           expr = wrap("np.linalg.det(" .. a64("a") .. ")", dt), opts = opts, jit = k == 1 and jit}
      add {name = string.format("slogdet sign %s%s", dt, sname(a.shape)), f = function(x) return (hl.linalg.slogdet(x)) end,
           inputs = {a}, expr = wrap("np.linalg.slogdet(" .. a64("a") .. ")[0]", dt), opts = {dtype = dt, rtol = 0, atol = 0},
           jit = k == 1 and jit}
      add {name = string.format("slogdet logabsdet %s%s", dt, sname(a.shape)),
           f = function(x) return select(2, hl.linalg.slogdet(x)) end, inputs = {a},
           expr = wrap("np.linalg.slogdet(" .. a64("a") .. ")[1]", dt), opts = {dtype = dt, rtol = 16 * n * eps, atol = 16 * n * eps},
           jit = k == 1 and jit}
      -- eigvalsh reads one triangle (UPLO): the matrix need not be symmetric
      local g = mats(batch, n, n, dt)
      local uplo = pick {"L", "U"}
      add {name = string.format("eigvalsh %s%s UPLO %s", dt, sname(g.shape), uplo), f = function(x) return hl.linalg.eigvalsh(x, uplo) end,
           inputs = {g}, expr = wrap(string.format("np.linalg.eigvalsh(%s, UPLO=%q)", a64("a"), uplo), dt),
           opts = {dtype = dt, rtol = 0, atol = 16 * n * n * eps}, jit = k == 1 and jit}
      -- singular values of any m x n (0 included)
      local m2, n2 = rint(0, 5), rint(0, 5)
      local r = mats(small_shape(2), m2, n2, dt)
      add {name = string.format("svd values %s%s", dt, sname(r.shape)),
           f = function(x) return hl.linalg.svd(x, false, false) end, inputs = {r},
           expr = wrap(string.format("np.linalg.svd(%s, compute_uv=False)", a64("a")), dt),
           opts = {dtype = dt, rtol = 0, atol = 16 * math.max(m2, n2, 1) ^ 2 * eps}, jit = k == 1 and jit}
      -- pinv of a well-conditioned m x n
      local p = mats(batch, rint(0, 4), rint(0, 4), dt, true)
      add {name = string.format("pinv %s%s", dt, sname(p.shape)), f = function(x) return hl.linalg.pinv(x) end, inputs = {p},
           expr = wrap(string.format("np.linalg.pinv(%s)", a64("a")), dt), opts = {dtype = dt, rtol = 0, atol = 64 * 4 * eps},
           jit = k == 1 and jit}
    end
    -- solve_triangular: the other triangle holds junk it must not read; lower or upper,
    -- transposed or not, a unit diagonal or not
    for k = 1, 6 do
      local batch, n = k <= 2 and {} or k == 6 and empty_batch() or small_shape(2), rint(1, 4)
      local a = mats(batch, n, n, dt, true)
      local vec = k == 1
      local b = vec and arr({n}, dt, {-2, 2}) or arr(cat(batch, {n, rint(1, 3)}), dt, {-2, 2})
      -- (lower: true, false or left out, scipy's default False)
      local o = {lower = ({true, false})[rint(1, 3)], trans = pick {0, 1, 2, "N", "T", "C"}, unit_diagonal = pick {true, false}}
      local lower = o.lower == true
      local T = lower and "np.tril(a)" or "np.triu(a)"
      if o.unit_diagonal then
        T = string.format("(np.%s(a, %d) + np.eye(%d))", lower and "tril" or "triu", lower and -1 or 1, n)
      end
      if o.trans ~= 0 and o.trans ~= "N" then T = "np.swapaxes(" .. T .. ", -1, -2)" end
      local e = string.format("np.linalg.solve(%s.astype(np.float64), b.astype(np.float64))", T)
      add {name = string.format("solve_triangular %s%s b %s lower %s trans %s unit %s", dt, sname(a.shape), sname(b.shape),
                                tostring(o.lower), tostring(o.trans), tostring(o.unit_diagonal)),
           f = function(x, y) return hl.linalg.solve_triangular(x, y, o) end, inputs = {a, b}, expr = wrap(e, dt),
           opts = {dtype = dt, rtol = 16 * n * eps, atol = 64 * n * 2 ^ n * eps}, jit = k <= 2 and jit}
    end
    -- lstsq's solution for a well-conditioned, full-rank m x n (m >= n), b a vector or k columns
    for k = 1, 3 do
      local n = rint(1, 4)
      local m = n + rint(0, 3)
      local a = mats({}, m, n, dt, true)
      local b = k == 1 and arr({m}, dt, {-2, 2}) or arr({m, rint(1, 3)}, dt, {-2, 2})
      add {name = string.format("lstsq %s%s b %s", dt, sname(a.shape), sname(b.shape)),
           f = function(x, y) return (hl.linalg.lstsq(x, y)) end, inputs = {a, b},
           expr = wrap(string.format("np.linalg.lstsq(%s, %s, rcond=None)[0]", a64("a"), a64("b")), dt),
           opts = {dtype = dt, rtol = 32 * m * eps, atol = 64 * m * eps}, jit = k == 1 and jit}
    end
    -- norm: vector orders along one axis; matrix orders over a pair of axes (either sign)
    local VORD = {"none", 2, 1, math.huge, -math.huge, 0, 3, 0.5, -1}
    for k, ord in ipairs(VORD) do
      if ord == "none" then ord = nil end
      local shape = rand_shape(3, 1)
      for i = 1, #shape do if shape[i] == 0 and ord ~= nil then shape[i] = 2 end end
      local x = arr(shape, dt, "finite")
      local axis = (#shape == 1 and math.random() < 0.5) and nil or rand_index(#shape)
      local keep = math.random() < 0.3 or nil
      local n = axis and shape[npax(axis) % #shape + 1] or size(shape)
      add {name = string.format("norm %s%s ord %s axis %s%s", dt, sname(shape), tostring(ord), tostring(axis), keep and " keepdims" or ""),
           f = function(v) return hl.linalg.norm(v, ord, axis, keep) end, inputs = {x},
           expr = wrap(string.format("np.linalg.norm(%s, ord=%s, axis=%s, keepdims=%s)", a64("a"), pyord(ord),
                                     axis and tostring(npax(axis)) or "None", kd(keep)), dt),
           opts = {dtype = dt, rtol = 64 * eps, atol = 16 * n * eps * max_abs(x)}, jit = k <= 3 and jit}
    end
    local MORD = {"fro", "nuc", 1, 2, math.huge, -1, -2, -math.huge}
    for k, ord in ipairs(MORD) do
      local shape = rand_shape(4, 2)
      for i = 1, #shape do if shape[i] == 0 then shape[i] = 2 end end
      local x = arr(shape, dt, "finite")
      local axis
      if #shape > 2 or math.random() < 0.5 then
        local i = rint(1, #shape)
        local j = i
        while j == i do j = rint(1, #shape) end
        axis = {math.random() < 0.5 and i or i - #shape - 1, math.random() < 0.5 and j or j - #shape - 1}
      end
      local keep = math.random() < 0.3 or nil
      local n = axis and shape[npax(axis[1]) % #shape + 1] * shape[npax(axis[2]) % #shape + 1] or size(shape)
      add {name = string.format("norm %s%s ord %s axes %s%s", dt, sname(shape), tostring(ord), axis and axes_name(axis) or "nil",
                                keep and " keepdims" or ""),
           f = function(v) return hl.linalg.norm(v, ord, axis, keep) end, inputs = {x},
           expr = wrap(string.format("np.linalg.norm(%s, ord=%s, axis=%s, keepdims=%s)", a64("a"), pyord(ord),
                                     axis and npaxes(axis) or "None", kd(keep)), dt),
           opts = {dtype = dt, rtol = 64 * eps, atol = 16 * n * eps * max_abs(x)}, jit = k <= 3 and jit}
    end
    -- matrix_power: negative (through inv), zero, positive, of a well-conditioned matrix scaled
    -- to norm about 1
    for k, p in ipairs {-3, -1, 0, 1, 2, 5} do
      local batch, n = k == 4 and empty_batch() or small_shape(2), rint(1, 4)
      local a = (mats(batch, n, n, dt, true) / (n + 1)):astype(dt)
      add {name = string.format("matrix_power %s%s n %d", dt, sname(a.shape), p),
           f = function(x) return hl.linalg.matrix_power(x, p) end, inputs = {a},
           expr = wrap(string.format("np.linalg.matrix_power(%s, %d)", a64("a"), p), dt),
           opts = {dtype = dt, rtol = 16 * n * math.abs(p) * eps, atol = 64 * n * math.max(1, math.abs(p)) * 2 ^ math.abs(p) * eps},
           jit = k <= 3 and jit}
    end
  end
  -- matrix_power of integers keeps the dtype and is exact
  for _, p in ipairs {0, 1, 3} do
    local a = arr(cat(small_shape(1), {3, 3}), "int32", {-2, 2})
    add {name = string.format("matrix_power int32%s n %d", sname(a.shape), p), f = function(x) return hl.linalg.matrix_power(x, p) end,
         inputs = {a}, expr = string.format("np.linalg.matrix_power(a, %d)", p), opts = {dtype = "int32"}, jit = "linalg int32"}
  end
end)
