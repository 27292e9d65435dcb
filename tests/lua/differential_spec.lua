-- The differential suite: every op group of docs/api.md against NumPy, on random shapes (rank 0 to 5,
-- zero-size axes, size-1 axes that broadcast, negative axes) and every dtype, with NaN, inf and
-- -0.0 mixed into float inputs; each case runs eagerly and (a few shapes per op and dtype) under
-- hl.jit. Nothing is hand-copied: each describe block sends its NumPy expressions to one python3
-- process (support/numpy.lua) at test time. Seeded: the same cases every run.
--
-- How the dtypes are compared:
-- * halua's dtype rules are encoded here (README "dtypes" and "Semantics worth knowing"; hl.help):
--   NumPy computes in the dtype halua computes in and the result is cast to halua's result dtype,
--   so the dtype check tests halua's documented rule and the values test the arithmetic. Where
--   halua deliberately differs from NumPy the comment says so (ints to float32 for float ops,
--   bool arithmetic to int32, sum/prod/cumsum of small ints to int32, integer division by zero).
-- * bfloat16 has no NumPy dtype: its inputs go to NumPy as (exact) float32 values, NumPy computes
--   in float32 (as halua does) and bf16() in numpy_eval.py rounds the result to bfloat16, nearest,
--   ties to even; the tolerance is then one bfloat16 unit in the last place (numpy.lua).
-- * float16 is computed natively by NumPy (which, like halua, computes in float32 and rounds).
-- * Accumulations (sums, scans, matmul) are computed by NumPy in float64 and rounded to the result
--   dtype; their tolerance grows with the number of terms (n * eps * max |term|), since halua's
--   order of summation is not NumPy's.
-- Jit: the cases of one op group and dtype are traced into ONE jitted function (a table of inputs
-- in, a table of results out), so each group costs one compile, not one per case; if that bundle
-- fails, its cases are re-run one by one under jit to name the failing one.
local hl = require "halua"
local np = require "support.numpy"
local D = require "support.differential"
-- (the machinery, random inputs and NumPy helpers: support/differential.lua)
local DTYPES, INTS, FLOAT, EPS, NPT, rint = D.DTYPES, D.INTS, D.FLOAT, D.EPS, D.NPT, D.rint
local pick, rand_index, size, sname, copy, rand_shape = D.pick, D.rand_index, D.size, D.sname, D.copy, D.rand_shape
local value, arr, bcast_partner, cast, wrap, npax = D.value, D.arr, D.bcast_partner, D.cast, D.wrap, D.npax
local npaxes, pylist, max_abs, promote, group, rand_axes = D.npaxes, D.pylist, D.max_abs, D.promote, D.group, D.rand_axes
local reduced_count, axes_name = D.reduced_count, D.axes_name

math.randomseed(20240611)

-- ---------------------------------------------------------------- elementwise unary

-- name, NumPy function, float-only (integers and bool compute in float32, as JAX)
local UNARY = {
  {"neg", "np.negative"}, {"abs", "np.abs"}, {"sign", "np.sign"}, {"square", "np.square"},
  {"floor", "np.floor"}, {"ceil", "np.ceil"}, {"round", "np.round"},
  {"exp", "np.exp", true}, {"expm1", "np.expm1", true}, {"log", "np.log", true}, {"log1p", "np.log1p", true},
  {"sqrt", "np.sqrt", true}, {"rsqrt", "(lambda v: 1 / np.sqrt(v))", true}, {"reciprocal", "np.reciprocal", true},
  {"sin", "np.sin", true}, {"cos", "np.cos", true}, {"tan", "np.tan", true}, {"asin", "np.arcsin", true},
  {"acos", "np.arccos", true}, {"atan", "np.arctan", true}, {"sinh", "np.sinh", true}, {"cosh", "np.cosh", true},
  {"tanh", "np.tanh", true}, {"erf", "(lambda v: np.vectorize(math.erf, otypes=[np.float64])(v).astype(v.dtype))", true},
}
local PREDICATES = {"isnan", "isinf", "isfinite", "logical_not"}

group("unary ops, every dtype, against NumPy", function(add)
  for _, dt in ipairs(DTYPES) do
    for _, u in ipairs(UNARY) do
      local op, fn, float_only = u[1], u[2], u[3]
      -- the dtype halua computes in: float ops take ints and bool to float32; the others keep
      -- ints and take bool to int32 (NumPy refuses negative(bool); halua promotes it)
      local c = FLOAT[dt] and dt or (float_only and "float32") or (dt == "bool" and "int32") or dt
      -- reciprocal of an int (1 / 0 included) computes in float32 too
      for k = 1, 3 do
        local x = arr(rand_shape(), dt)
        -- integers: floor, ceil and round give the value itself (NumPy gives a float)
        local expr = wrap(fn .. "(" .. cast("a", dt, c) .. ")", c)
        -- signs of zero as NumPy's, but sign(-0.0) is -0.0 in halua, as in JAX (XLA's sign keeps
        -- the zero's sign), where NumPy gives 0.0
        add {name = string.format("%s %s%s", op, dt, sname(x.shape)), f = hl[op], inputs = {x}, expr = expr,
             opts = {dtype = c, signed_zero = op ~= "sign"}, jit = k == 1 and ("unary " .. dt)}
      end
    end
    for _, op in ipairs(PREDICATES) do
      for k = 1, 2 do
        local x = arr(rand_shape(), dt)
        add {name = string.format("%s %s%s", op, dt, sname(x.shape)), f = hl[op], inputs = {x},
             expr = "np." .. op .. "(a)", opts = {dtype = "bool"}, jit = k == 1 and ("unary " .. dt)}
      end
    end
  end
end)

-- ---------------------------------------------------------------- elementwise binary

local BINARY = {
  {"add", "np.add"}, {"sub", "np.subtract"}, {"mul", "np.multiply"}, {"div", "np.true_divide"},
  {"pow", "np.power"}, {"mod", "np.mod"}, {"maximum", "np.maximum"}, {"minimum", "np.minimum"},
  {"atan2", "np.arctan2"}, {"floor_divide", "np.floor_divide"},
  {"eq", "np.equal"}, {"ne", "np.not_equal"}, {"lt", "np.less"}, {"le", "np.less_equal"},
  {"gt", "np.greater"}, {"ge", "np.greater_equal"},
  {"logical_and", "np.logical_and"}, {"logical_or", "np.logical_or"}, {"logical_xor", "np.logical_xor"},
}
local TO_BOOL = {eq = true, ne = true, lt = true, le = true, gt = true, ge = true, logical_and = true,
                 logical_or = true, logical_xor = true}
-- the dtype halua computes a binary op in, given the promoted dtype t
local function binary_compute(op, t)
  if (op == "div" or op == "atan2") and not FLOAT[t] then return "float32" end   -- as JAX
  -- bool: add, mul, maximum, minimum stay bool (NumPy's logical forms); the rest go to int32
  if t == "bool" and not (TO_BOOL[op] or op == "add" or op == "mul" or op == "maximum" or op == "minimum") then
    return "int32"
  end
  return t
end
local function binary_expr(op, fn, da, db, t)
  local c = binary_compute(op, t)
  local e = string.format("%s(%s, %s)", fn, cast("a", da, c), cast("b", db, c))
  if TO_BOOL[op] then return e, "bool" end
  return wrap(e, c), c
end
-- exact IEEE results keep the sign of zero (NumPy's): not for maximum/minimum, whose choice
-- between -0.0 and 0.0 IEEE leaves open
-- (nor mod and floor_divide: a zero remainder or quotient is 0.0 in halua where NumPy gives it
-- the divisor's or the quotient's sign, -0.0; a known difference, not checked)
local SIGNED = {add = true, sub = true, mul = true, div = true}

group("binary ops with broadcasting, every dtype, against NumPy", function(add)
  for _, dt in ipairs(DTYPES) do
    for _, bop in ipairs(BINARY) do
      local op, fn = bop[1], bop[2]
      for k = 1, 2 do
        local sa = rand_shape()
        local sb = k == 1 and copy(sa) or bcast_partner(sa)
        if k == 2 and math.random() < 0.5 then sa, sb = sb, sa end
        local x = arr(sa, dt)
        -- NumPy refuses integers to negative integer powers: exponents 0..6 there
        local y = arr(sb, dt, (op == "pow" and not FLOAT[dt] and dt ~= "bool") and {0, 6} or nil)
        local expr, rdt = binary_expr(op, fn, dt, dt, dt)
        add {name = string.format("%s %s%s %s", op, dt, sname(sa), sname(sb)), f = hl[op], inputs = {x, y}, expr = expr,
             opts = {dtype = rdt, signed_zero = SIGNED[op]}, jit = k == 2 and ("binary " .. dt)}
      end
    end
    -- weakly typed Lua numbers take the array's dtype (bool with a number computes in int32)
    for _, w in ipairs {{"add", 3}, {"sub", 2}, {"maximum", 1}, {"lt", 1}, {"mod", 3}} do
      local op, k = w[1], w[2]
      local x = arr(rand_shape(), dt)
      local c = dt == "bool" and "int32" or dt
      local e = string.format("np.%s(%s, %s(%d))", ({add = "add", sub = "subtract", mul = "multiply", maximum = "maximum",
        lt = "less", mod = "mod", floor_divide = "floor_divide"})[op], cast("a", dt, c), NPT[c], k)
      local rdt = op == "lt" and "bool" or c
      add {name = string.format("%s(%s%s, %d) (a Lua number)", op, dt, sname(x.shape), k),
           f = function(a) return hl[op](a, k) end, inputs = {x}, expr = op == "lt" and e or wrap(e, c),
           opts = {dtype = rdt}}
      add {name = string.format("%s(%d, %s%s) (a Lua number)", op, k, dt, sname(x.shape)),
           f = function(a) return hl[op](k, a) end, inputs = {x},
           expr = (op == "lt" and function(s) return s end or function(s) return wrap(s, c) end)(
             string.format("np.%s(%s(%d), %s)", ({add = "add", sub = "subtract", mul = "multiply", maximum = "maximum",
               lt = "less", mod = "mod", floor_divide = "floor_divide"})[op], NPT[c], k, cast("a", dt, c))),
           opts = {dtype = rdt}, jit = "binary " .. dt}
    end
  end
end)

group("mixed dtypes promote by the lattice, against NumPy", function(add)
  local ops = {{"add", "np.add"}, {"mul", "np.multiply"}, {"maximum", "np.maximum"}, {"lt", "np.less"},
               {"sub", "np.subtract"}, {"div", "np.true_divide"}}
  for i = 1, 48 do
    local da, db = DTYPES[(i - 1) % 9 + 1], pick(DTYPES)
    local bop = pick(ops)
    local sa = rand_shape(4)
    local sb = bcast_partner(sa)
    -- values every dtype holds exactly (no rounding on the way to the common dtype)
    local x, y = arr(sa, da, da == "uint8" and {0, 100} or {-100, 100}), arr(sb, db, db == "uint8" and {0, 100} or {-100, 100})
    local t = promote(da, db)
    local expr, rdt = binary_expr(bop[1], bop[2], da, db, t)
    add {name = string.format("%s %s%s %s%s -> %s", bop[1], da, sname(sa), db, sname(sb), rdt), f = hl[bop[1]],
         inputs = {x, y}, expr = expr, opts = {dtype = rdt}, jit = i <= 24 and "mixed"}
  end
  -- where promotes its branches and broadcasts all three; any dtype is a condition (nonzero)
  for i = 1, 18 do
    local dc, da, db = pick(DTYPES), DTYPES[(i - 1) % 9 + 1], pick(DTYPES)
    local s = rand_shape(4)
    local c, x, y = arr(bcast_partner(s), dc), arr(s, da, {0, 100}), arr(bcast_partner(s), db, {0, 100})
    local t = promote(da, db)
    add {name = string.format("where(%s%s, %s%s, %s%s) -> %s", dc, sname(c.shape), da, sname(x.shape), db, sname(y.shape), t),
         f = hl.where, inputs = {c, x, y},
         expr = wrap(string.format("np.where(a.astype(bool), %s, %s)", cast("b", da, t), cast("c", db, t)), t),
         opts = {dtype = t, signed_zero = true}, jit = i <= 9 and "mixed"}
  end
end)


local SMALL_INT = {bool = true, uint8 = true, int8 = true}
-- op, NumPy expression builder, result dtype rule, float accumulation (tolerance grows with n)
local REDUCTIONS = {"sum", "prod", "mean", "var", "std", "max", "min", "argmax", "argmin", "all", "any", "logsumexp"}

group("reductions over axis tables, negative axes, keepdims, every dtype", function(add)
  for _, dt in ipairs(DTYPES) do
    for _, op in ipairs(REDUCTIONS) do
      for k = 1, 3 do
        local shape = rand_shape()
        local arg = op == "argmax" or op == "argmin"
        local axes = rand_axes(#shape, arg)
        local keep = math.random() < 0.4
        local x = arr(shape, dt, op == "prod" and "unit" or nil)
        local n = reduced_count(shape, axes)
        local ax, kd = npaxes(axes), keep and "True" or "False"
        local expr, rdt, opts
        if op == "sum" or op == "prod" then
          -- bool, uint8 and int8 give int32 (JAX's rule; NumPy gives int64); floats accumulate
          rdt = SMALL_INT[dt] and "int32" or dt
          if FLOAT[dt] then
            expr = wrap(string.format("np.%s(a.astype(np.float64), axis=%s, keepdims=%s)", op, ax, kd), dt)
          else
            expr = string.format("np.%s(a, axis=%s, keepdims=%s, dtype=%s)", op, ax, kd, NPT[rdt])
          end
        elseif op == "mean" or op == "var" or op == "std" or op == "logsumexp" then
          rdt = FLOAT[dt] and dt or "float32"   -- integers give float32
          local f = op == "logsumexp" and "lse" or "np." .. op
          expr = wrap(string.format("%s(%s.astype(np.float64), axis=%s, keepdims=%s)", f, cast("a", dt, rdt), ax, kd), rdt)
        elseif op == "max" or op == "min" then
          rdt = dt
          expr = wrap(string.format("np.%s(a, axis=%s, keepdims=%s)", op, ax, kd), dt)
        elseif arg then
          rdt = "int64"
          expr = string.format("np.%s(a, axis=%s, keepdims=%s) + 1", op, ax, kd)   -- 1-based
        else
          rdt = "bool"
          expr = string.format("np.%s(a, axis=%s, keepdims=%s)", op, ax, kd)
        end
        opts = {dtype = rdt}
        if FLOAT[rdt] then
          local tol = np.tolerance[rdt]
          local m = max_abs(x)
          -- halua sums float32 and float64 in its own order; the 2-byte floats accumulate in
          -- float64 (sum) or float32 (the others) and round once
          local eps = (rdt == "float32" or rdt == "float64") and EPS[rdt] or EPS.float32
          if op == "var" or op == "std" then m = m * m end
          opts.rtol = tol[1] + (op == "prod" and 2 * n * eps or 0)
          opts.atol = tol[2] + 2 * n * eps * m
          if op == "std" then opts.atol = tol[2] + math.sqrt(2 * n * eps * m) end
        end
        local fails = (op == "max" or op == "min" or arg) and n == 0   -- NumPy and halua refuse
        add {name = string.format("%s %s%s axes %s%s", op, dt, sname(shape), axes_name(axes), keep and " keepdims" or ""),
             f = function(a) return hl[op](a, axes, keep) end, inputs = {x}, expr = expr, opts = opts,
             fails = fails, jit = k == 1 and ("reduce " .. dt)}
      end
    end
  end
end)

group("cumsum and cumprod, every dtype", function(add)
  for _, dt in ipairs(DTYPES) do
    for _, op in ipairs {"cumsum", "cumprod"} do
      for k = 1, 3 do
        local shape = rand_shape()
        local axis = #shape > 0 and math.random() < 0.8 and rand_index(#shape) or nil
        local x = arr(shape, dt, op == "cumprod" and "unit" or nil)
        -- bool, uint8 and int8 give int32 (JAX's rule; NumPy's sum dtype is int64)
        local rdt = SMALL_INT[dt] and "int32" or dt
        local ax = axis and tostring(npax(axis)) or "None"
        local expr
        if FLOAT[dt] then
          expr = wrap(string.format("np.%s(a.astype(np.float64), axis=%s)", op, ax), dt)
        else
          expr = string.format("np.%s(a, axis=%s, dtype=%s)", op, ax, NPT[rdt])
        end
        local opts = {dtype = rdt}
        if FLOAT[dt] then
          -- log-step scans, every partial result rounded to dt: n * eps of the largest term
          local n = axis and shape[npax(axis) % #shape + 1] or size(shape)
          local tol = np.tolerance[dt]
          opts.rtol = tol[1] + (op == "cumprod" and 2 * n * EPS[dt] or 0)
          opts.atol = tol[2] + (op == "cumsum" and 2 * n * EPS[dt] * max_abs(x) or 0)
        end
        add {name = string.format("%s %s%s axis %s", op, dt, sname(shape), tostring(axis)),
             f = function(a) return hl[op](a, axis) end, inputs = {x}, expr = expr, opts = opts,
             jit = k == 1 and ("scan " .. dt)}
      end
    end
  end
end)

-- ---------------------------------------------------------------- shape ops

-- a random shape with n elements (n > 0), rank 0 to 5
local function factor_shape(n)
  local s = {}
  while n > 1 and #s < 4 do
    local ds = {}
    for d = 2, n do if n % d == 0 then ds[#ds + 1] = d end end
    local d = pick(ds)
    s[#s + 1] = d
    n = n / d
    if math.random() < 0.3 then s[#s + 1] = 1 end
  end
  if n > 1 then s[#s + 1] = n end
  for i = #s, 2, -1 do local j = rint(1, i); s[i], s[j] = s[j], s[i] end
  return s
end

local function shuffled(n)
  local p = {}
  for i = 1, n do p[i] = i end
  for i = n, 2, -1 do local j = rint(1, i); p[i], p[j] = p[j], p[i] end
  return p
end

-- each maker returns name, f, inputs, NumPy expression (a, b, c are the inputs), given x's dtype
local SHAPE_OPS = {
  reshape = function(dt)
    local x = arr(rand_shape(), dt)
    local target
    if x.size == 0 then
      target = {0, rint(1, 3)}
      if math.random() < 0.5 then target = {rint(1, 2), 0} end
    else
      target = factor_shape(x.size)
      if #target > 0 and math.random() < 0.4 then target[rint(1, #target)] = -1 end
    end
    return sname(x.shape) .. " to " .. sname(target), function(a) return hl.reshape(a, target) end, {x},
           "np.reshape(a, " .. pylist(target) .. ")"
  end,
  transpose = function(dt)
    local x = arr(rand_shape(), dt)
    if math.random() < 0.3 then
      return sname(x.shape) .. " reversed", function(a) return hl.transpose(a) end, {x}, "np.transpose(a)"
    end
    local p = shuffled(x.ndim)
    local q = {}
    for i, v in ipairs(p) do q[i] = v - 1 end
    return sname(x.shape) .. " perm {" .. table.concat(p, ",") .. "}", function(a) return hl.transpose(a, p) end, {x},
           "np.transpose(a, " .. pylist(q) .. ")"
  end,
  T = function(dt)
    local x = arr(rand_shape(), dt)
    return sname(x.shape), function(a) return a.T end, {x}, "a.T"
  end,
  flatten = function(dt)
    local x = arr(rand_shape(), dt)
    return sname(x.shape), function(a) return hl.flatten(a) end, {x}, "a.reshape(-1)"
  end,
  expand_dims = function(dt)
    local x = arr(rand_shape(4), dt)
    local r = x.ndim + 1
    local axis = math.random() < 0.5 and rint(1, r) or -rint(1, r)
    return sname(x.shape) .. " axis " .. axis, function(a) return hl.expand_dims(a, axis) end, {x},
           "np.expand_dims(a, " .. npax(axis) .. ")"
  end,
  squeeze = function(dt)
    local s = rand_shape()
    local ones = {}
    for i, e in ipairs(s) do if e == 1 then ones[#ones + 1] = math.random() < 0.5 and i or i - #s - 1 end end
    local x = arr(s, dt)
    if #ones == 0 or math.random() < 0.3 then
      return sname(s) .. " all", function(a) return hl.squeeze(a) end, {x}, "np.squeeze(a)"
    end
    local axes = math.random() < 0.5 and ones[1] or ones
    return sname(s) .. " axes " .. axes_name(axes), function(a) return hl.squeeze(a, axes) end, {x},
           "np.squeeze(a, axis=" .. npaxes(axes) .. ")"
  end,
  concatenate = function(dt)
    local s = rand_shape(5, 1)
    local axis = rint(1, #s)
    local parts, names = {}, {}
    for i = 1, rint(1, 3) do
      local si = copy(s)
      si[axis] = rint(0, 3)
      parts[i] = arr(si, dt)
      names[i] = string.char(96 + i)
    end
    local ax = math.random() < 0.5 and axis or axis - #s - 1
    local n = #parts
    return string.format("%d of %s axis %d", n, sname(s), ax),
           function(...) return hl.concatenate({...}, ax) end, parts,
           "np.concatenate([" .. table.concat(names, ",") .. "], axis=" .. npax(ax) .. ")"
  end,
  stack = function(dt)
    local s = rand_shape(4)
    local parts, names = {}, {}
    for i = 1, rint(1, 3) do parts[i] = arr(s, dt); names[i] = string.char(96 + i) end
    local r = #s + 1
    local ax = math.random() < 0.5 and rint(1, r) or -rint(1, r)
    return string.format("%d of %s axis %d", #parts, sname(s), ax), function(...) return hl.stack({...}, ax) end, parts,
           "np.stack([" .. table.concat(names, ",") .. "], axis=" .. npax(ax) .. ")"
  end,
  split = function(dt)
    local s = rand_shape(4, 1)
    local axis = rint(1, #s)
    local n = s[axis]
    local x = arr(s, dt)
    local how, npw
    if n > 0 and math.random() < 0.5 then
      local ds = {}
      for d = 1, n do if n % d == 0 then ds[#ds + 1] = d end end
      how = pick(ds)
      npw = tostring(how)
    else
      how = {}
      local npos = {}
      for p = 2, n do if math.random() < 0.5 then how[#how + 1] = p; npos[#npos + 1] = p - 1 end end
      npw = "[" .. table.concat(npos, ",") .. "]"
    end
    local parts = type(how) == "number" and how or #how + 1
    local part = rint(1, parts)
    return string.format("%s %s along %d, part %d", sname(s), type(how) == "number" and how .. " parts" or
             "at {" .. table.concat(how, ",") .. "}", axis, part),
           function(a) return hl.split(a, how, axis)[part] end, {x},
           string.format("np.split(a, %s, axis=%d)[%d]", npw, axis - 1, part - 1)
  end,
  tile = function(dt)
    local x = arr(rand_shape(4), dt)
    local reps = {}
    -- at most rank 4: tile works on twice the rank internally, and halua has 8 dimensions at most
    -- (rank-5 tiles are refused: "halua: tile: at most 8 dimensions")
    for i = 1, rint(1, math.max(x.ndim, 1)) do reps[i] = rint(0, 3) end
    if math.random() < 0.3 then reps = rint(1, 3) end
    local r = type(reps) == "number" and tostring(reps) or pylist(reps)
    return sname(x.shape) .. " by " .. r:gsub(",%)", ")"), function(a) return hl.tile(a, reps) end, {x},
           "np.tile(a, " .. r .. ")"
  end,
  ["repeat"] = function(dt)
    local x = arr(rand_shape(4), dt)
    local r = rint(0, 3)
    local axis = x.ndim > 0 and math.random() < 0.7 and rint(1, x.ndim) or nil
    return sname(x.shape) .. " " .. r .. " times axis " .. tostring(axis), function(a) return hl["repeat"](a, r, axis) end, {x},
           string.format("np.repeat(a, %d, axis=%s)", r, axis and tostring(axis - 1) or "None")
  end,
  flip = function(dt)
    local x = arr(rand_shape(), dt)
    local axes = rand_axes(x.ndim)
    return sname(x.shape) .. " axes " .. axes_name(axes), function(a) return hl.flip(a, axes) end, {x},
           "np.flip(a, axis=" .. npaxes(axes) .. ")"
  end,
  pad = function(dt)
    local x = arr(rand_shape(4), dt)
    local width, w
    local u = math.random()
    if u < 0.3 or x.ndim == 0 then
      width = rint(0, 2); w = tostring(width)
    elseif u < 0.6 then
      width = {rint(0, 2), rint(0, 2)}; w = pylist(width)
    else
      width = {}
      local t = {}
      for i = 1, x.ndim do width[i] = {rint(0, 2), rint(0, 2)}; t[i] = pylist(width[i]) end
      w = pylist(t)
    end
    -- the value is a Lua number, taken in x's dtype (true for bool)
    local v = dt == "bool" and 1 or dt == "uint8" and rint(0, 3) or value(dt, "small")
    return sname(x.shape) .. " by " .. w .. " value " .. v, function(a) return hl.pad(a, width, v) end, {x},
           string.format("np.pad(a, %s, constant_values=%s(%d))", w, NPT[dt], v)
  end,
  broadcast_to = function(dt)
    local s = rand_shape(4)
    local t = {}
    for _ = 1, rint(0, 5 - #s) do t[#t + 1] = rint(0, 3) end
    for _, e in ipairs(s) do t[#t + 1] = (e == 1 and math.random() < 0.6) and rint(0, 3) or e end
    local x = arr(s, dt)
    return sname(s) .. " to " .. sname(t), function(a) return hl.broadcast_to(a, t) end, {x},
           "np.broadcast_to(a, " .. pylist(t) .. ")"
  end,
}
local SHAPE_ORDER = {"reshape", "transpose", "T", "flatten", "expand_dims", "squeeze", "concatenate", "stack", "split",
                     "tile", "repeat", "flip", "pad", "broadcast_to"}

group("shape ops on random shapes, every dtype (exact, signed zeros kept)", function(add)
  for di, dt in ipairs(DTYPES) do
    for oi, op in ipairs(SHAPE_ORDER) do
      for k = 1, 2 do
        local name, f, inputs, expr = SHAPE_OPS[op](dt)
        -- data movement compiles slowly under jit (a transposing copy 0.5 to 4 s; a pipeline of
        -- several tens of seconds): one jitted case per op, the dtype rotating, each alone
        local jit = k == 1 and (oi + di) % 9 == 0 and (op .. " " .. dt)
        add {name = op .. " " .. dt .. " " .. name, f = f, inputs = inputs, expr = wrap(expr, dt),
             opts = {dtype = dt, signed_zero = true}, jit = jit}
      end
    end
  end
end)

-- ---------------------------------------------------------------- indexing and gathers

-- a random slice spec for x[{...}] and its NumPy form
local function rand_slice(shape)
  local spec, py = {}, {}
  for i, n in ipairs(shape) do
    local u = math.random()
    if n == 0 or u < 0.25 then
      spec[i], py[i] = {}, ":"
    elseif u < 0.45 then
      local k = rand_index(n)
      spec[i], py[i] = k, tostring(npax(k))
    else
      local a, b = rint(1, n), rint(1, n)
      local step = u < 0.75 and 1 or (math.random() < 0.5 and rint(1, 2) or -rint(1, 2))
      if (step > 0 and a > b) or (step < 0 and a < b) then a, b = b, a end
      local a0, b0 = a - 1, b - 1
      -- inclusive ranges; endpoints may be written from the end
      local sa = math.random() < 0.3 and a - n - 1 or a
      local sb = math.random() < 0.3 and b - n - 1 or b
      if step == 1 and math.random() < 0.5 then
        spec[i] = {sa, sb}
      else
        spec[i] = {sa, sb, step}
      end
      py[i] = string.format("%d:%s:%d", a0, step > 0 and tostring(b0 + 1) or (b0 == 0 and "None" or tostring(b0 - 1)), step)
    end
  end
  return spec, "a[" .. (#py > 0 and table.concat(py, ",") or "()") .. "]"
end
local function spec_name(spec)
  local t = {}
  for i, s in ipairs(spec) do
    t[i] = type(s) == "number" and tostring(s) or "{" .. table.concat(s, ",") .. "}"
  end
  return "{" .. table.concat(t, ", ") .. "}"
end

group("indexing, take, take_along_axis, one_hot, clip, every dtype", function(add)
  for di, dt in ipairs(DTYPES) do
    -- as for shape ops: under jit, one kind of case per dtype (rotating), alone
    local function jit_for(kind) return kind == di % 7 and ("index " .. dt .. " " .. kind) end
    -- x[i]: select along the first axis
    for k = 1, 2 do
      local s = rand_shape(5, 1)
      if s[1] == 0 then s[1] = 2 end
      local i = rand_index(s[1])
      local x = arr(s, dt)
      add {name = string.format("x[%d] %s%s", i, dt, sname(s)), f = function(a) return a[i] end, inputs = {x},
           expr = wrap("a[" .. npax(i) .. "]", dt), opts = {dtype = dt, signed_zero = true}, jit = k == 1 and jit_for(0)}
    end
    -- x[{...}]: indices, inclusive ranges, whole axes, strides (negative too)
    for k = 1, 3 do
      local x = arr(rand_shape(5, 1), dt)
      local spec, py = rand_slice(x.shape)
      add {name = string.format("x[%s] %s%s", spec_name(spec), dt, sname(x.shape)), f = function(a) return a[spec] end,
           inputs = {x}, expr = wrap(py, dt), opts = {dtype = dt, signed_zero = true}, jit = k == 1 and jit_for(1)}
    end
    -- take, with every integer dtype as indices
    for k = 1, 3 do
      local x = arr(rand_shape(4), dt)
      local axis = x.ndim > 0 and math.random() < 0.7 and rint(1, x.ndim) or nil
      local n = axis and x.shape[axis] or x.size
      local idt = INTS[(di + k) % 4 + 1]
      local idx = n > 0 and arr(rand_shape(2), idt, {1, n}) or hl.zeros({0}, idt)
      local ax = axis and (math.random() < 0.5 and axis or axis - x.ndim - 1)
      add {name = string.format("take %s%s %s%s axis %s", dt, sname(x.shape), idt, sname(idx.shape), tostring(ax)),
           f = function(a, i) return hl.take(a, i, ax) end, inputs = {x, idx},
           expr = wrap(string.format("np.take(a, b.astype(np.int64) - 1, axis=%s)", ax and npax(ax) or "None"), dt),
           opts = {dtype = dt, signed_zero = true}, jit = k == 1 and jit_for(2)}
    end
    -- take_along_axis: indices of x's rank, other axes broadcasting
    for k = 1, 2 do
      local s = rand_shape(4, 1)
      local axis = rint(1, #s)
      if s[axis] == 0 then s[axis] = 3 end
      local si = {}
      for i, e in ipairs(s) do si[i] = i == axis and rint(0, 3) or (math.random() < 0.3 and 1 or e) end
      local x, idx = arr(s, dt), arr(si, pick(INTS), {1, s[axis]})
      local ax = math.random() < 0.5 and axis or axis - #s - 1
      add {name = string.format("take_along_axis %s%s %s%s axis %d", dt, sname(s), idx.dtype, sname(si), ax),
           f = function(a, i) return hl.take_along_axis(a, i, ax) end, inputs = {x, idx},
           expr = wrap(string.format("np.take_along_axis(a, np.broadcast_to(b.astype(np.int64) - 1, " ..
             "tuple(b.shape[i] if i == %d else a.shape[i] for i in range(a.ndim))), axis=%d)", axis - 1, axis - 1), dt),
           opts = {dtype = dt, signed_zero = true}, jit = k == 1 and jit_for(3)}
    end
    -- one_hot with indices of every integer dtype (out of range: a row of zeros), result dtype dt
    do
      local idt = INTS[di % 4 + 1]
      local n = rint(1, 5)
      local idx = arr(rand_shape(3), idt, idt == "uint8" and {0, n + 1} or {-1, n + 1})
      add {name = string.format("one_hot %s%s n %d as %s", idt, sname(idx.shape), n, dt),
           f = function(i) return hl.one_hot(i, n, dt) end, inputs = {idx},
           expr = wrap(string.format("(a.astype(np.int64)[..., None] == np.arange(1, %d))", n + 1), dt),
           opts = {dtype = dt}, jit = jit_for(4)}
    end
    -- clip with number bounds (weakly typed: the array's dtype; bool computes in int32) and with arrays
    for k = 1, 2 do
      local x = arr(rand_shape(), dt)
      -- bounds every dtype holds exactly
      local lo, hi = pick {0, 1, 2}, pick {2, 3, 5}
      if FLOAT[dt] then lo, hi = pick {-1.5, 0.5, 1}, pick {1.5, 2, 3.25} end
      if dt == "bool" then lo, hi = 0, 1 end
      if k == 2 then lo = nil end
      local c = dt == "bool" and "int32" or dt
      local e = cast("a", dt, c)
      if lo then e = string.format("np.maximum(%s, %s(%s))", e, NPT[c], lo) end
      e = string.format("np.minimum(%s, %s(%s))", e, NPT[c], hi)
      add {name = string.format("clip %s%s %s %s", dt, sname(x.shape), tostring(lo), tostring(hi)),
           f = function(a) return hl.clip(a, lo, hi) end, inputs = {x}, expr = wrap(e, c), opts = {dtype = c},
           jit = k == 1 and jit_for(5)}
    end
    do
      local x = arr(rand_shape(4), dt)
      local lo, hi = arr(bcast_partner(x.shape), dt), arr(bcast_partner(x.shape), dt)
      local c = dt   -- array bounds: maximum and minimum of two bool arrays stay bool
      add {name = string.format("clip %s%s by arrays %s %s", dt, sname(x.shape), sname(lo.shape), sname(hi.shape)),
           f = function(a, l, h) return hl.clip(a, l, h) end, inputs = {x, lo, hi},
           expr = wrap(string.format("np.minimum(np.maximum(%s, %s), %s)", cast("a", dt, c), cast("b", dt, c), cast("c", dt, c)), c),
           opts = {dtype = c}, jit = jit_for(6)}
    end
    -- indices must be integers: float and bool ones are refused, with the op and dtype named
    if FLOAT[dt] or dt == "bool" then
      local x = arr({3, 2}, "float32")
      local idx = arr({2}, dt, dt == "bool" and nil or {1, 2})
      add {name = "take refuses " .. dt .. " indices", f = function(a, i) return hl.take(a, i, 1) end, inputs = {x, idx},
           refuse = "take: indices must be integers, got " .. dt, jit = true}
      add {name = "one_hot refuses " .. dt .. " indices", f = function(i) return hl.one_hot(i, 3) end, inputs = {idx},
           refuse = "one_hot: indices must be integers, got " .. dt, jit = true}
      add {name = "take_along_axis refuses " .. dt .. " indices", f = function(a, i) return hl.take_along_axis(a, i, 1) end,
           inputs = {x, hl.reshape(idx, {2, 1})}, refuse = "take_along_axis", jit = true}
    end
  end
end)

-- ---------------------------------------------------------------- sort, argsort

group("sort and argsort (stable, NaN last), every dtype", function(add)
  for _, dt in ipairs(DTYPES) do
    for _, op in ipairs {"sort", "argsort"} do
      for k = 1, 3 do
        local x = arr(rand_shape(5, 1), dt, k == 3 and "small" or nil)   -- "small": many ties
        local axis = math.random() < 0.3 and nil or rand_index(x.ndim)
        local ax = axis and npax(axis) or -1
        local expr = op == "sort" and wrap(string.format("np.sort(a, axis=%d, kind='stable')", ax), dt)
                     or string.format("np.argsort(a, axis=%d, kind='stable') + 1", ax)
        add {name = string.format("%s %s%s axis %s", op, dt, sname(x.shape), tostring(axis)),
             f = function(a) return hl[op](a, axis) end, inputs = {x}, expr = expr,
             opts = {dtype = op == "sort" and dt or "int64", signed_zero = true}, jit = k == 1 and ("sort " .. dt)}
      end
    end
  end
end)

-- ---------------------------------------------------------------- matmul, einsum, dot, outer

-- matmul's shapes, NumPy's semantics: vectors on either side, batches that broadcast
local function matmul_shapes()
  local m, kk, n = rint(0, 4), rint(0, 4), rint(0, 4)
  if math.random() < 0.8 then m, kk, n = rint(1, 4), rint(1, 4), rint(1, 4) end
  local u = math.random()
  if u < 0.1 then return {kk}, {kk} end
  if u < 0.2 then return {kk}, {kk, n} end
  if u < 0.3 then return {m, kk}, {kk} end
  local batch = rand_shape(3)
  local a, b = copy(batch), bcast_partner(batch)
  if math.random() < 0.5 then a, b = b, a end
  a[#a + 1], a[#a + 2] = m, kk
  b[#b + 1], b[#b + 2] = kk, n
  return a, b, kk
end

local EINSUM = {"ij,jk->ik", "ij,jk", "bij,bjk->bik", "bij,bjk->kbi", "ij,ij->", "ij,ij->i", "i,j->ij", "ij,j->i",
                "ijk,ikl->jl", "ii,i->i", "ij->ji", "ij->", "ii", "abc,cd->abd", "ab,ba"}
local function einsum_inputs(spec, dt, kind)
  local ext = {}
  local lhs = spec:match("^([^-]*)")
  local ins = {}
  for term in lhs:gmatch("[^,]+") do
    local s = {}
    for l in term:gmatch(".") do
      if not ext[l] then ext[l] = math.random() < 0.1 and 0 or rint(1, 4) end
      s[#s + 1] = ext[l]
    end
    ins[#ins + 1] = arr(s, dt, kind or (math.random() < 0.5 and "finite" or nil))
  end
  return ins, ext
end

-- products of k terms: halua accumulates in float32 (float64 for float64), NumPy's reference in float64
local function product_opts(rdt, k, a, b)
  if not FLOAT[rdt] then return {dtype = rdt} end
  local eps = rdt == "float64" and EPS.float64 or EPS.float32
  local tol = np.tolerance[rdt]
  return {dtype = rdt, rtol = tol[1], atol = tol[2] + 2 * math.max(k, 1) * eps * max_abs(a) * max_abs(b)}
end

group("matmul, einsum, dot, outer, every dtype", function(add)
  for di, dt in ipairs(DTYPES) do
    local jit = "matmul " .. dt
    -- bool products are bool, an or of ands, as NumPy's
    local c = dt
    -- fmt has %s for each input: floats go to NumPy in float64 (rounded to dt at the end)
    local function ref(fmt, n)
      local function conv(name) return FLOAT[dt] and name .. ".astype(np.float64)" or cast(name, dt, c) end
      local e = string.format(fmt, conv("a"), conv("b"))
      if n == 1 then e = string.format(fmt, conv("a")) end
      return wrap(e, c)
    end
    for k = 1, 3 do
      local sa, sb, kk = matmul_shapes()
      kk = kk or sa[#sa]
      local x, y = arr(sa, dt, k % 2 == 0 and "finite" or nil), arr(sb, dt, k % 2 == 0 and "finite" or nil)
      add {name = string.format("matmul %s%s %s", dt, sname(sa), sname(sb)), f = hl.matmul, inputs = {x, y},
           expr = ref("np.matmul(%s, %s)"), opts = product_opts(c, kk, x, y), jit = k == 1 and jit .. " matmul"}
    end
    for k = 1, 6 do
      local spec = EINSUM[(di * 6 + k) % #EINSUM + 1]
      -- bool, uint8, int8: the result dtype depends on the spec (a sum gives int32, a product
      -- through matmul keeps the dtype, NumPy keeps it always); small values, no wrap-around,
      -- and the values compared without the dtype
      local ins = einsum_inputs(spec, dt, SMALL_INT[dt] and {0, 2} or nil)
      local kk = 1
      for _, x in ipairs(ins) do kk = math.max(kk, x.size) end
      add {name = string.format("einsum %q %s %s", spec, dt, sname(ins[1].shape) .. (ins[2] and sname(ins[2].shape) or "")),
           f = function(...) return hl.einsum(spec, ...) end, inputs = ins,
           expr = SMALL_INT[dt] and string.format("np.einsum(%q, %s)", spec, #ins == 1 and "a.astype(np.int64)" or
                                                    "a.astype(np.int64), b.astype(np.int64)")
                  or ref(string.format("np.einsum(%q, %s)", spec, #ins == 1 and "%s" or "%s, %s"), #ins),
           opts = SMALL_INT[dt] and {dtype = false} or product_opts(c, kk, ins[1], ins[2] or ins[1]),
           jit = k <= 2 and jit .. " einsum " .. k}
    end
    -- dot: 0-d operands multiply, vectors give the inner product
    local v, w = arr({rint(0, 5)}, dt), nil
    w = arr(v.shape, dt)
    add {name = string.format("dot %s%s %s", dt, sname(v.shape), sname(w.shape)), f = hl.dot, inputs = {v, w},
         expr = ref("np.dot(%s, %s)"), opts = product_opts(c, v.size, v, w), jit = jit}
    local s0, m = arr({}, dt), arr(rand_shape(3), dt)
    local mc = dt == "bool" and "bool" or dt   -- a 0-d operand multiplies: bool * bool stays bool
    add {name = string.format("dot 0-d %s with %s", dt, sname(m.shape)), f = hl.dot, inputs = {s0, m},
         expr = wrap("np.multiply(a, b)", mc), opts = {dtype = mc}, jit = jit}
    local o1, o2 = arr(rand_shape(2), dt), arr(rand_shape(2), dt)
    add {name = string.format("outer %s%s %s", dt, sname(o1.shape), sname(o2.shape)), f = hl.outer, inputs = {o1, o2},
         expr = wrap("np.outer(a, b)", dt), opts = {dtype = dt}, jit = jit}
  end
end)

-- ---------------------------------------------------------------- astype

group("astype between every pair of dtypes", function(add)
  for _, from in ipairs(DTYPES) do
    for _, to in ipairs(DTYPES) do
      for k = 1, 1 do
        local kind
        -- float to integer conversion of NaN, inf or out-of-range values is undefined in C and in
        -- NumPy: only values the target holds (truncated toward zero)
        if FLOAT[from] and not FLOAT[to] and to ~= "bool" then
          kind = to == "uint8" and {0, 250} or to == "int8" and {-120, 120} or {-60000, 60000}
        end
        -- wide ints beyond every float's exactness: float16 overflows to inf, bfloat16 rounds
        if from == "int64" and math.random() < 0.5 then kind = {-3e9, 3e9} end
        local x = arr(rand_shape(), from, kind)
        add {name = string.format("astype %s%s to %s", from, sname(x.shape), to),
             f = function(a) return a:astype(to) end, inputs = {x}, expr = wrap("a", to) ,
             opts = {dtype = to, signed_zero = true, rtol = 0, atol = 0}, jit = k == 1 and ("astype " .. from)}
      end
    end
  end
end)

-- ---------------------------------------------------------------- regressions the suite found

group("jit: constants inf, NaN and 0 as operands; 64 arrays in and out", function(add)
  -- pipelines compile with fast-math flags: a constant divisor 0 (folded to a product by inf) or a
  -- constant inf/NaN operand used to give garbage under jit (x / 0 gave NaN and random values)
  for _, dt in ipairs {"float32", "float64", "float16", "bfloat16"} do
    -- 21 values: long enough to run in vectors (bfloat16 x * inf was garbage only there)
    local x = hl.array({1, -1, 0, -0.0, 0 / 0, 1 / 0, -2.5, 3, -1 / 0, 0.5, 7, -4, 1e-3, 2, -0.0, 0 / 0, 9, -8, 1 / 0, 6, 0}, dt)
    for _, t in ipairs {
      {"x / 0", function(a) return a / 0 end, "np.true_divide(%s, 0)"},
      {"x % 0", function(a) return a % 0 end, "np.mod(%s, 0)"},
      {"floor_divide(x, 0)", function(a) return hl.floor_divide(a, 0) end, "np.floor_divide(%s, 0)"},
      {"x * inf", function(a) return a * (1 / 0) end, "np.multiply(%s, np.inf)"},
      {"x + NaN", function(a) return a + (0 / 0) end, "np.add(%s, np.nan)"},
      {"maximum(x, -inf)", function(a) return hl.maximum(a, -1 / 0) end, "np.maximum(%s, -np.inf)"},
      -- (Halide's simplifier took x * 0 for 0 and x + 0 for x: NaN, inf and -0 inputs)
      {"x * 0", function(a) return a * 0 end, "np.multiply(%s, 0)"},
      {"x + 0", function(a) return a + 0 end, "np.add(%s, 0)"},
      {"0 - x", function(a) return 0 - a end, "np.subtract(0, %s)"},
    } do
      add {name = t[1] .. " " .. dt, f = t[2], inputs = {x}, expr = wrap(string.format(t[3], cast("a", dt, dt)), dt),
           opts = {dtype = dt}, jit = t[1] .. " alone"}
    end
    -- constants finite as Lua numbers but not in the dtype: 1e39 is inf as a float32 (it gave
    -- -285.6 and 4.6e-41 under jit), and a divisor whose reciprocal is (Halide divides through it)
    local big = ({float32 = 1e39, bfloat16 = 1e39, float16 = 70000})[dt]
    if big then
      add {name = "x * " .. big .. " " .. dt, f = function(a) return a * big end, inputs = {x},
           expr = wrap(string.format("np.multiply(%s, np.inf)", cast("a", dt, dt)), dt), opts = {dtype = dt}, jit = "x * big alone"}
    end
    -- chains of constants that Halide's simplifier folds into one: (x * 1e20) * 1e20 became
    -- x * inf on float32, which fast-math made garbage; each step in the dtype, as NumPy takes it
    local c = ({float32 = {1e20, 1e-30, 3e38, "np.float32"}, float64 = {1e200, 1e-200, 1.7e308, "np.float64"}})[dt]
    if c then
      local T = c[4]
      for _, t in ipairs {
        {"(x * big) * big", function(a) return (a * c[1]) * c[1] end, "np.multiply(np.multiply(%s, C1), C1)"},
        {"(x / (1 / big)) * big", function(a) return (a / (1 / c[1])) * c[1] end, "np.multiply(np.true_divide(%s, 1 / C1), C1)"},
        {"(x * small) * small", function(a) return (a * c[2]) * c[2] end, "np.multiply(np.multiply(%s, C2), C2)"},
        {"(x + max) + max", function(a) return (a + c[3]) + c[3] end, "np.add(np.add(%s, C3), C3)"},
      } do
        local expr = string.format(t[3], cast("a", dt, dt)):gsub("C(%d)", function(i) return T .. "(" .. string.format("%.17g", c[tonumber(i)]) .. ")" end)
        add {name = t[1] .. " " .. dt, f = t[2], inputs = {x}, expr = wrap(expr, dt), opts = {dtype = dt}, jit = t[1] .. " alone"}
      end
    end
    local tiny = ({float32 = {1e-39, "np.float32(1e-39)"}, float16 = {1e-5, "np.float16(1e-5)"},
                   float64 = {1e-310, "np.float64(1e-310)"}})[dt]
    if tiny then
      add {name = "x / " .. tiny[1] .. " " .. dt, f = function(a) return a / tiny[1] end, inputs = {x},
           expr = wrap(string.format("np.true_divide(%s, %s)", cast("a", dt, dt), tiny[2]), dt), opts = {dtype = dt},
           jit = "x / tiny alone"}
    end
    local e = hl.zeros({3, 0}, dt)
    for _, op in ipairs {"mean", "var", "std"} do
      add {name = op .. " over an empty axis " .. dt, f = function(a) return hl[op](a, 2) end, inputs = {e},
           expr = wrap(string.format("np.%s(a.astype(np.float64), axis=1)", op), dt), opts = {dtype = dt}, jit = op .. " alone"}
    end
  end
end)

group("jit: float terms that cancel, with inf, NaN and -0 inputs (IEEE, not algebra)", function(add)
  -- under fast-math Halide's simplifier cancelled terms (x - x was 0 and x / x was 1 for inf and
  -- NaN, (x + 2) - x was 2) and LLVM folded comparisons as if no value were inf (sign(1 / (x - x))
  -- was inf): CPU programs compute in IEEE arithmetic (hl_lower.cpp, hl_lower_ieee)
  for _, dt in ipairs {"float32", "float64", "float16", "bfloat16"} do
    local x = hl.array({1, -1, 0, -0.0, 0 / 0, 1 / 0, -2.5, 3, -1 / 0, 0.5, 7, -4, 1e-3, 2, -0.0, 0 / 0, 9, -8, 1 / 0, 6, 0}, dt)
    for _, t in ipairs {
      {"x - x", function(a) return a - a end, "np.subtract(A, A)"},
      {"x / x", function(a) return a / a end, "np.true_divide(A, A)"},
      {"x + (-x)", function(a) return a + (-a) end, "np.add(A, np.negative(A))"},
      {"(x + 2) - x", function(a) return (a + 2) - a end, "np.subtract(np.add(A, 2), A)"},
      {"x * x - x * x", function(a) return a * a - a * a end, "np.subtract(np.multiply(A, A), np.multiply(A, A))"},
      {"sign(1 / (x - x))", function(a) return hl.sign(1 / (a - a)) end, "np.sign(np.true_divide(1, np.subtract(A, A)))"},
      {"any(x / (x - x)) by rows", function(a) return hl.any(hl.reshape(a / (a - a), {3, 7}), 2) end,
       "np.any(np.true_divide(A, np.subtract(A, A)).reshape(3, 7), axis=1)", "bool"},
      -- |x| clears the sign bit: |-0.0| is +0.0 (Halide's abs is select(x >= 0, x, -x), which only
      -- fast-math had turned into fabs), seen through atan2 and a division
      {"atan2(abs(x), abs(x))", function(a) return hl.atan2(hl.abs(a), hl.abs(a)) end,
       "np.arctan2(np.absolute(A), np.absolute(A))"},
      {"1 / abs(x)", function(a) return 1 / hl.abs(a) end, "np.true_divide(1, np.absolute(A))"},
    } do
      local expr = t[3]:gsub("A", cast("a", dt, dt))
      add {name = t[1] .. " " .. dt, f = t[2], inputs = {x}, expr = t[4] and expr or wrap(expr, dt),
           opts = {dtype = t[4] or dt}, jit = t[1] .. " alone"}
    end
  end
end)

group("jit: integer floor_divide and mod by every constant divisor", function(add)
  -- a divisor that is a Lua number is a constant of the jitted program. Halide 14 divides by a
  -- constant from 2 to 255 (8, 16 and 32 bits) through multiplier tables, and its round-to-zero
  -- table gave wrong quotients: 4 // 3 was -1, 100 // 3 was -17 (int8). Every int8 numerator by
  -- every divisor, uint8's by some, and int32/int64 numerators near the ends of their range by
  -- divisors around those tables' bounds; each case stacks one row per divisor
  local all8 = {}
  for v = -128, 127 do all8[#all8 + 1] = v end
  local wide = {-2147483648, -2147483647, -65536, -1000, -255, -7, -4, -3, -1, 0, 1, 2, 3, 4, 5, 7, 100, 255, 256, 1000, 65535, 2147483646, 2147483647}
  local near = {{-2147483647, -2147483647}, {-65537, -65536}, {-1000, -1000}, {-258, -250}, {-130, -122}, {-9, 9},
                {122, 130}, {250, 258}, {1000, 1000}, {65536, 65537}, {2147483647, 2147483647}}
  local specs = {
    {"int8", all8, {{-128, 127}}},
    {"uint8", nil, {{0, 9}, {125, 131}, {250, 255}}},   -- (unsigned division never took the faulty table)
    {"int32", wide, near},
    {"int64", wide, near},
  }
  for _, sp in ipairs(specs) do
    local dt, nums = sp[1], sp[2]
    local x
    if dt == "uint8" then x = (hl.array(all8, "int32") + 128):astype("uint8") else x = hl.array(nums, "int64"):astype(dt) end
    local divs = {}
    for _, r in ipairs(sp[3]) do
      for d = r[1], r[2] do divs[#divs + 1] = d end
    end
    local T = "np." .. dt
    local dlist = "[" .. table.concat(divs, ", ") .. "]"
    for _, op in ipairs {{"floor_divide", hl.floor_divide, "np.floor_divide"}, {"mod", hl.mod, "np.mod"}} do
      add {name = op[1] .. " of every " .. dt .. " numerator by " .. #divs .. " constant divisors", inputs = {x},
           f = function(a)
             local rows, blocks = {}, {}
             for i, d in ipairs(divs) do
               rows[#rows + 1] = op[2](a, d)
               if #rows == 64 or i == #divs then blocks[#blocks + 1], rows = hl.stack(rows), {} end
             end
             return hl.concatenate(blocks, 1)
           end,
           expr = string.format("np.stack([%s(a, %s(d)) for d in %s])", op[3], T, dlist),
           opts = {dtype = dt}, jit = op[1] .. " " .. dt .. " alone"}
    end
  end
end)

-- ---------------------------------------------------------------- index arrays

-- x:at({..., idx, ...}):mode(v) on random shapes with one index array on a random axis (random
-- shape, duplicates, negatives), specials in float inputs, against NumPy's ufunc.at and fancy
-- assignment; and the segment reductions. The 2-byte floats combine in float32 and round once
-- where NumPy rounds each step, so their tolerance grows with the repeats.
local UFUNC_AT = {add = "np.add.at", mul = "np.multiply.at", min = "np.minimum.at", max = "np.maximum.at"}
group("index-array updates and segment reductions, every dtype", function(add)
  for _, dt in ipairs(DTYPES) do
    for k = 1, 6 do
      local shape = rand_shape(3, 1)
      if size(shape) == 0 then shape[1] = 2 end
      for d = 1, #shape do if shape[d] == 0 then shape[d] = 2 end end
      local ax = rint(1, #shape)
      local ishape = ({{}, {rint(1, 5)}, {2, rint(1, 3)}})[rint(1, 3)]
      local iv = {}
      for i = 1, size(ishape) do iv[i] = rand_index(shape[ax]) end
      local idx = #ishape == 0 and hl.array(iv[1], "int32") or hl.reshape(hl.array(iv, pick {"int32", "int64"}), ishape)
      local sel = {}
      for d = 1, ax - 1 do sel[#sel + 1] = shape[d] end
      for _, e in ipairs(ishape) do sel[#sel + 1] = e end
      for d = ax + 1, #shape do sel[#sel + 1] = shape[d] end
      local modes = dt == "bool" and {"set", "min", "max"} or {"set", "add", "mul", "min", "max"}
      local mode = modes[(k - 1) % #modes + 1]
      local x, v = arr(shape, dt, mode == "mul" and FLOAT[dt] and "unit" or nil), arr(sel, dt, mode == "mul" and (FLOAT[dt] and "unit" or "small") or nil)
      local key, npkey = {}, {}
      for d = 1, #shape do key[d], npkey[d] = {}, "slice(None)" end
      key[ax], npkey[ax] = idx, "np.where(b < 0, b, b - 1)"
      local xa, va = cast("a", dt, dt), cast("c", dt, dt)
      local expr = mode == "set" and
        string.format("(lambda o: (o.__setitem__(%s, %s), o)[1])(%s.copy())", pylist(npkey), va, xa) or
        string.format("(lambda o: (%s(o, %s, %s), o)[1])(%s.copy())", UFUNC_AT[mode], pylist(npkey), va, xa)
      local opts = {dtype = dt}
      if (dt == "float16" or dt == "bfloat16") and (mode == "add" or mode == "mul") then opts.rtol = 8 * EPS[dt]; opts.atol = 8 * EPS[dt] end
      add {name = string.format("x:at %s %s index %s on axis %d %s", dt, sname(shape), sname(ishape), ax, mode),
           f = function(a, b, c)
             local kb = copy(key)
             kb[ax] = b
             local u = a:at(kb)
             return u[mode](u, c)
           end, inputs = {x, idx, v},
           expr = wrap(expr, dt), opts = opts, jit = "at " .. dt}
    end
    if dt ~= "bool" then
      local shape = rand_shape(3, 1)
      local n = shape[1]
      local ids = {}
      for i = 1, n do ids[i] = rint(0, 5) end   -- 0 and 5 are dropped (num_segments 4)
      local sid = n == 0 and hl.zeros({0}, "int32") or hl.array(ids, "int32")
      local data = arr(shape, dt)
      for _, op in ipairs {"sum", "max", "min"} do
        local init = op == "sum" and "0" or FLOAT[dt] and (op == "max" and "-np.inf" or "np.inf") or
                     string.format("np.iinfo(%s).%s", NPT[dt], op == "max" and "min" or "max")
        local fn = ({sum = "np.add.at", max = "np.maximum.at", min = "np.minimum.at"})[op]
        local xa = cast("a", dt, dt)
        local expr = string.format("(lambda o, m: (%s(o, b[m] - 1, %s[m]), o)[1])(np.full((4,) + a.shape[1:], %s, %s), (b >= 1) & (b <= 4))",
                                   fn, xa, init, NPT[dt])
        local opts = {dtype = dt}
        if (dt == "float16" or dt == "bfloat16") and op == "sum" then opts.rtol = 8 * EPS[dt]; opts.atol = 8 * EPS[dt] end
        add {name = string.format("segment_%s %s %s", op, dt, sname(shape)), f = function(a, b) return hl["segment_" .. op](a, b, 4) end,
             inputs = {data, sid}, expr = wrap(expr, dt), opts = opts, jit = "segment " .. dt}
      end
    end
  end
end)

describe("jit with many arrays", function()
  it("takes 40 arrays in and gives 40 out (the kernel's buffer list holds 64 in and 64 out)", function()
    local xs = {}
    for i = 1, 40 do xs[i] = hl.full({2}, i) end
    local out = hl.jit(function(t)
      local r = {}
      for i, a in ipairs(t) do r[i] = a * 2 end
      return r
    end)(xs)
    for i = 1, 40 do assert.are.same({2 * i, 2 * i}, out[i]:totable()) end
  end)
end)

-- ---------------------------------------------------------------- cummax, cummin, top_k (hl.lax)

group("cummax, cummin and top_k, every dtype", function(add)
  for _, dt in ipairs(DTYPES) do
    for _, op in ipairs {"cummax", "cummin"} do
      for k = 1, 3 do
        local x = arr(rand_shape(5, 1), dt, k == 3 and "small" or nil)
        local axis = math.random() < 0.3 and nil or rand_index(x.ndim)
        local ufunc = op == "cummax" and "maximum" or "minimum"
        add {name = string.format("%s %s%s axis %s", op, dt, sname(x.shape), tostring(axis)),
             f = function(a) return hl[op](a, axis) end, inputs = {x},
             expr = wrap(string.format("np.%s.accumulate(a, axis=%d)", ufunc, axis and npax(axis) or 0), dt),
             opts = {dtype = dt}, jit = k == 1 and ("cummax " .. dt)}
      end
    end
    for k = 1, 3 do
      local x = arr(rand_shape(4, 1), dt, k == 3 and "small" or nil)
      local n = x.shape[x.ndim]
      local kk = rint(0, n)
      -- largest first, ties in index order (NaN largest): a stable sort of the reversed row, read backwards
      local order = "(a.shape[-1] - 1 - np.flip(np.argsort(np.flip(a, -1), axis=-1, kind='stable'), -1))"
      add {name = string.format("top_k values %s%s k %d", dt, sname(x.shape), kk),
           f = function(a) return (hl.lax.top_k(a, kk)) end, inputs = {x},
           expr = wrap(string.format("np.take_along_axis(a, %s, -1)[..., :%d]", order, kk), dt),
           opts = {dtype = dt}, jit = k == 1 and ("top_k " .. dt)}
      add {name = string.format("top_k indices %s%s k %d", dt, sname(x.shape), kk),
           f = function(a) return select(2, hl.lax.top_k(a, kk)) end, inputs = {x},
           expr = string.format("%s[..., :%d] + 1", order, kk), opts = {dtype = "int64"}, jit = k == 1 and ("top_k idx " .. dt)}
    end
  end
end)
