-- Random small array programs for the program fuzzer (fuzz/programs.lua, program_fuzz_spec.lua).
--
--   local gen = require "support.program_gen"
--   local prog = gen.generate(seed [, opts])   -- the same seed gives the same program
--   prog.lua       -- "return function(a, b) local v1 = hl.exp(a) ... return v4 end"
--   prog.np        -- the same program as one NumPy expression for numpy_eval.py (mc(lambda P: ...))
--   prog.inputs    -- {{name=, dtype=, shape=, values=}, ...}; gen.arrays(prog) makes them
--   prog.dtype, prog.shape   -- what halua's documented rules say the result is
--
-- A program is 1 to 12 statements over 1 to 3 input arrays; each statement is drawn from one
-- table of ops (elementwise unary and binary ops with arrays or weakly typed Lua numbers,
-- comparisons, where, clip, reductions over axis tables with keepdims, scans, reshape,
-- transpose, slicing, concatenate, matmul, sort, astype, ...). Every statement is written twice
-- from the same description, once in Lua and once in NumPy, so the two forms cannot drift.
--
-- dtypes follow halua's documented rules (README "dtypes" and "Semantics worth knowing"), as
-- differential_spec.lua encodes them: the NumPy form computes in the dtype halua computes in and
-- converts the result to halua's result dtype (in_dtype), so the predicted dtype is checked
-- against halua's and the values test the arithmetic.
--
-- Values: every value carries an interval (and for floats whether it may be NaN), so that
-- programs stay where both sides are defined: no int32/int64 overflow (int8 and uint8 wrap, as
-- documented, and may), no float overflow, logarithms of positive values, no division by an
-- interval holding 0, no float-to-int conversion out of range. A "wild" program (opts.wild, or
-- a few in a hundred) drops those guards and puts NaN, inf and -0.0 into its float inputs.
--
-- Rounding: the NumPy form marks every rounded step P(value, dtype, ulps [, bound]); mc()
-- (numpy_eval.py) runs it once as written (the reference) and a few times with each step moved
-- by that many units in the last place (accumulations by their error bound n * eps * sum|x|).
-- How far each result element moves is the tolerance a comparison needs: halua rounds
-- elsewhere (its own float32 transcendentals, its summation order, and under jit Halide's
-- reassociation and contraction), and a program can amplify that arbitrarily (cancellation, a
-- comparison near equality, a float-to-int conversion). Elements that move to another integer,
-- bool or NaN pattern are not compared.
local M = {}

local FLOAT = {float32 = true, float64 = true, float16 = true, bfloat16 = true}
local INT = {int8 = true, int32 = true, int64 = true, uint8 = true}
local SMALL_INT = {bool = true, uint8 = true, int8 = true}
local EPS = {float32 = 2 ^ -23, float64 = 2 ^ -52, float16 = 2 ^ -10, bfloat16 = 2 ^ -7}
-- the largest magnitude a safe program lets a value of each float dtype reach
local LIMIT = {float16 = 3e4, bfloat16 = 1e30, float32 = 1e30, float64 = 1e200}
-- below this a float may be flushed to 0 (underflow)
local SMALLEST = {float16 = 2 ^ -14, bfloat16 = 2 ^ -126, float32 = 2 ^ -126, float64 = 2 ^ -1022}
local RANGE = {int8 = {-128, 127}, uint8 = {0, 255}, int32 = {-2 ^ 31, 2 ^ 31 - 1}, int64 = {-2 ^ 53, 2 ^ 53}, bool = {0, 1}}
local NPT = {float32 = "np.float32", float64 = "np.float64", float16 = "np.float16", bfloat16 = "np.float32",
             int8 = "np.int8", int32 = "np.int32", int64 = "np.int64", uint8 = "np.uint8", bool = "np.bool_"}
M.FLOAT, M.EPS = FLOAT, EPS

local promote = require "support.promotion"
local INF = math.huge

---------------------------------------------------------------- random numbers

-- MINSTD (Park and Miller, multiplier 48271): exact in doubles, independent of math.random
local Rng = {}
Rng.__index = Rng
function M.rng(seed)
  local s = math.floor(math.abs(seed)) % 2147483646 + 1
  local r = setmetatable({s = s}, Rng)
  for _ = 1, 4 do r:next() end
  return r
end
function Rng:next() self.s = self.s * 48271 % 2147483647; return self.s end
function Rng:float() return (self:next() - 1) / 2147483646 end
function Rng:int(a, b) return a + math.floor(self:float() * (b - a + 1)) end
function Rng:chance(p) return self:float() < p end
function Rng:pick(t) return t[self:int(1, #t)] end
-- t: {{weight, value}, ...}
function Rng:weighted(t)
  local total = 0
  for _, e in ipairs(t) do total = total + e[1] end
  local u = self:float() * total
  for _, e in ipairs(t) do
    u = u - e[1]
    if u < 0 then return e[2] end
  end
  return t[#t][2]
end
function Rng:shuffled(n)
  local p = {}
  for i = 1, n do p[i] = i end
  for i = n, 2, -1 do local j = self:int(1, i); p[i], p[j] = p[j], p[i] end
  return p
end

---------------------------------------------------------------- shapes and text

local function size(shape) local n = 1 for _, e in ipairs(shape) do n = n * e end return n end
local function copy(t) local c = {} for i, v in ipairs(t) do c[i] = v end return c end
local function sname(s) return "[" .. table.concat(s, ",") .. "]" end
local function same(s, t) return #s == #t and table.concat(s, ",") == table.concat(t, ",") end
M.size, M.sname = size, sname

local function lua_table(t) return "{" .. table.concat(t, ", ") .. "}" end
local function pylist(t) return "(" .. table.concat(t, ",") .. (#t == 1 and ",)" or ")") end
local function npax(a) return a > 0 and a - 1 or a end
local function npaxes(axes)
  if axes == nil then return "None" end
  if type(axes) == "number" then return tostring(npax(axes)) end
  local t = {}
  for i, a in ipairs(axes) do t[i] = npax(a) end
  return pylist(t)
end
local function lua_axes(axes)
  if axes == nil then return "nil" end
  if type(axes) == "number" then return tostring(axes) end
  return lua_table(axes)
end
-- a number as Lua source (exact) and as Python source
local function lua_num(v)
  if v ~= v then return "0/0" end
  if v == INF then return "1/0" end
  if v == -INF then return "-1/0" end
  if v == 0 and 1 / v < 0 then return "-0.0" end
  if v == math.floor(v) and math.abs(v) < 2 ^ 53 then return string.format("%d", v) end
  return string.format("%.17g", v)
end
local function py_num(v)
  if v ~= v then return "np.nan" end
  if v == INF then return "np.inf" end
  if v == -INF then return "-np.inf" end
  if v == 0 and 1 / v < 0 then return "-0.0" end
  if v == math.floor(v) and math.abs(v) < 2 ^ 53 then return string.format("%d", v) end
  return string.format("%.17g", v)
end
M.lua_num, M.py_num = lua_num, py_num

-- input `name` (values of halua dtype `from`) as NumPy values of halua dtype `to`
local function cast(name, from, to)
  if from == to or (from == "bfloat16" and to == "float32") then return name end
  if to == "bfloat16" then return "in_dtype(" .. name .. ", 'bfloat16')" end
  return name .. ".astype(" .. NPT[to] .. ")"
end
-- a NumPy expression's result as halua dtype dt
local function wrap(expr, dt) return "in_dtype(" .. expr .. ", '" .. dt .. "')" end
-- a rounded step: P(value, dt, ulps [, bound]) (nothing for integers and bool, which are exact)
local function P(expr, dt, ulps, bound)
  if not FLOAT[dt] then return expr end
  return string.format("P(%s, '%s', %s%s)", expr, dt, tostring(ulps or 1), bound and ", " .. bound or "")
end
-- x as float64 for an accumulation computed in NumPy
local function f64(name) return name .. ".astype(np.float64)" end
-- the error bound of an accumulation: eps * n per term
local function eps_acc(dt) return dt == "float64" and EPS.float64 or EPS.float32 end

---------------------------------------------------------------- intervals

-- rounding a result into dt: widen by a unit in the last place, flush tiny values to 0
local function fit(dt, lo, hi)
  if lo ~= lo or hi ~= hi then return -INF, INF end
  if FLOAT[dt] then
    local e = 2 * EPS[dt]
    lo = lo - math.abs(lo) * e
    hi = hi + math.abs(hi) * e
    if lo > 0 and lo < SMALLEST[dt] * 2 ^ 12 then lo = 0 end
    if hi < 0 and hi > -SMALLEST[dt] * 2 ^ 12 then hi = 0 end
  end
  return lo, hi
end
local function corners(f, alo, ahi, blo, bhi)
  local lo, hi = INF, -INF
  for _, a in ipairs {alo, ahi} do
    for _, b in ipairs {blo, bhi} do
      local v = f(a, b)
      if v ~= v then return -INF, INF end
      lo, hi = math.min(lo, v), math.max(hi, v)
    end
  end
  return lo, hi
end
local function mag(v) return math.max(math.abs(v.lo), math.abs(v.hi)) end
local function has_zero(v) return v.lo <= 0 and v.hi >= 0 end

---------------------------------------------------------------- the builder

local B = {}
B.__index = B

-- the statements' Lua and NumPy forms; values carry name, dtype, shape, lo, hi, nan
local function builder(rng, opts)
  return setmetatable({rng = rng, opts = opts, wild = opts.wild, inputs = {}, vals = {}, lua = {}, np = {},
                       nv = 0, ntmp = 0, max_inputs = opts.max_inputs or 3, max_size = opts.max_size or 256}, B)
end

function B:tmp() self.ntmp = self.ntmp + 1; return "t" .. self.ntmp end

-- may a value of dt hold [lo, hi] (with NaN if nan)? Integers outside their range wrap (int8,
-- uint8: documented, and NumPy wraps alike) or are refused (int32, int64: overflow is not
-- defined). Returns the interval to record, or nil.
function B:admit(dt, lo, hi, nan)
  lo, hi = fit(dt, lo, hi)
  if dt == "bool" then return 0, 1, false end
  if INT[dt] then
    if nan or lo ~= lo or hi ~= hi or lo == -INF or hi == INF then return nil end
    local r = RANGE[dt]
    if lo < r[1] or hi > r[2] then
      if dt == "int8" or dt == "uint8" then return r[1], r[2], false end
      return nil
    end
    return lo, hi, false
  end
  if self.wild then
    if nan then return -INF, INF, true end
    return lo, hi, false
  end
  if nan or lo ~= lo or hi ~= hi then return nil end
  if math.max(math.abs(lo), math.abs(hi)) > LIMIT[dt] then return nil end
  return lo, hi, false
end

-- emits `local vK = lua` and `vK := np` (np may be a list: earlier walrus terms, then the value)
function B:emit(dt, shape, lo, hi, nan, lua, np)
  if size(shape) > self.max_size or #shape > 6 then return nil end
  local l, h, n = self:admit(dt, lo, hi, nan)
  if not l then return nil end
  for _, w in ipairs(self.vals) do
    if lua:find("%f[%w_]" .. w.name .. "%f[^%w_]") then w.used = true end
  end
  self.nv = self.nv + 1
  local name = "v" .. self.nv
  local v = {name = name, dtype = dt, shape = shape, lo = l, hi = h, nan = n}
  self.vals[#self.vals + 1] = v
  self.lua[#self.lua + 1] = "local " .. name .. " = " .. lua
  if type(np) == "table" then
    for i = 1, #np - 1 do self.np[#self.np + 1] = np[i] end
    np = np[#np]
  end
  self.np[#self.np + 1] = name .. " := " .. np
  return v
end

local DTYPE_W = {{30, "float32"}, {14, "float64"}, {8, "float16"}, {8, "bfloat16"}, {12, "int32"}, {5, "int64"},
                 {5, "int8"}, {4, "uint8"}, {12, "bool"}}

function B:rand_dtype() return self.rng:weighted(self.opts.dtypes or DTYPE_W) end

-- rank 0 to 4, extents 1 (often: broadcasting), 2 to 5, and 0 now and then
function B:rand_shape(maxrank)
  local rng = self.rng
  local r = rng:weighted {{8, 0}, {22, 1}, {30, 2}, {25, 3}, {12, 4}}
  r = math.min(r, maxrank or 4, self.opts.max_rank or 4)
  local s = {}
  for i = 1, r do
    local u = rng:float()
    s[i] = u < 0.04 and 0 or u < 0.3 and 1 or rng:int(2, 5)
  end
  while size(s) > 48 do
    local big = 1
    for i = 2, r do if s[i] > s[big] then big = i end end
    s[big] = s[big] - 1
  end
  return s
end

-- a shape that broadcasts with s: a suffix of s with some axes made 1, sometimes longer
function B:bcast_partner(s)
  local rng = self.rng
  local k = rng:int(0, #s)
  local t = {}
  if #s < 4 and rng:chance(0.15) then t[1] = rng:int(1, 3) end
  for i = #s - k + 1, #s do t[#t + 1] = rng:chance(0.3) and 1 or s[i] end
  return t
end

-- one input value of dtype
function B:value(dt, kind)
  local rng = self.rng
  if dt == "bool" then return rng:chance(0.5) end
  if INT[dt] then
    if kind == "small" then return dt == "uint8" and rng:int(0, 5) or rng:int(-5, 5) end
    if dt == "uint8" then return rng:chance(0.3) and rng:int(0, 255) or rng:int(0, 20) end
    if dt == "int8" then return rng:chance(0.3) and rng:int(-128, 127) or rng:int(-20, 20) end
    if rng:chance(0.1) then return rng:int(-1000, 1000) end
    return rng:int(-20, 20)
  end
  if self.wild and rng:chance(0.12) then return rng:pick {0 / 0, INF, -INF, -0.0, 0.0} end
  local u = rng:float()
  local v
  if kind == "pos" then v = 0.25 + 3.75 * rng:float()
  elseif kind == "unit" then v = -1 + 2 * rng:float()
  elseif u < 0.15 then v = rng:int(-4, 4) + 0.5          -- ties for round, floor_divide, mod
  elseif u < 0.25 then v = rng:int(-4, 4)
  else v = -4 + 8 * rng:float() end
  return v
end

-- exact values of dt (as hl.array(v, dt) would round them): the interval is computed from them
local function round_to(dt, v)
  if type(v) ~= "number" or v ~= v or v == INF or v == -INF then return v end
  if dt == "float32" or dt == "bfloat16" or dt == "float16" then
    local bits = dt == "float32" and 24 or dt == "bfloat16" and 8 or 11
    if v == 0 then return v end
    local m, e = math.frexp(v)
    local scale = 2 ^ bits
    if dt == "float16" and e < -13 then scale = 2 ^ (bits - (-13 - e)) end   -- subnormals
    local q = m * scale
    local f = math.floor(q)
    local r = q - f
    if r > 0.5 or (r == 0.5 and f % 2 == 1) then f = f + 1 end
    return math.ldexp(f / scale, e)
  end
  return v
end

-- a new input (a, b or c) of shape and dtype
function B:new_input(shape, dt, kind)
  if #self.inputs >= self.max_inputs then return nil end
  local rng = self.rng
  dt = dt or self:rand_dtype()
  kind = kind or (FLOAT[dt] and rng:weighted {{60, "any"}, {25, "pos"}, {15, "unit"}}) or
         (INT[dt] and rng:chance(0.3) and "small") or "any"
  local n = size(shape)
  local values, lo, hi, nan = {}, INF, -INF, false
  for i = 1, n do
    local v = round_to(dt, self:value(dt, kind))
    values[i] = v
    local x = type(v) == "boolean" and (v and 1 or 0) or v
    if x ~= x then nan = true else lo, hi = math.min(lo, x), math.max(hi, x) end
  end
  if n == 0 or lo > hi then lo, hi = 0, 0 end
  local name = string.char(96 + #self.inputs + 1)
  local inp = {name = name, dtype = dt, shape = copy(shape), values = values}
  self.inputs[#self.inputs + 1] = inp
  local v = {name = name, dtype = dt, shape = copy(shape), lo = lo, hi = hi, nan = nan, input = true}
  self.vals[#self.vals + 1] = v
  return v
end

-- an operand: the latest value most often, else one no statement has used yet (so that little
-- of the program is dead code), else any
function B:pick_value(filter)
  local rng, vals = self.rng, self.vals
  local v
  if not filter and rng:chance(0.65) then v = vals[#vals]
  else
    local c, unused = {}, {}
    for _, w in ipairs(vals) do
      if not filter or filter(w) then
        c[#c + 1] = w
        if not w.used and not w.input then unused[#unused + 1] = w end
      end
    end
    if #c == 0 then return nil end
    v = (#unused > 0 and rng:chance(0.6)) and rng:pick(unused) or rng:pick(c)
  end
  return v
end

-- the broadcast of shapes (nil when they do not broadcast)
local function broadcast(...)
  local shapes = {...}
  local r = 0
  for _, s in ipairs(shapes) do r = math.max(r, #s) end
  local out = {}
  for i = 1, r do
    local e = 1
    for _, s in ipairs(shapes) do
      local d = s[#s - r + i] or 1
      if d ~= 1 then
        if e ~= 1 and e ~= d then return nil end
        e = d
      end
    end
    out[i] = e
  end
  return out
end
M.broadcast = broadcast

-- a partner for x in a binary op: an earlier value that broadcasts, a new input, or x itself
function B:partner(x, dt)
  local rng = self.rng
  local u = rng:float()
  if u < 0.45 then
    local y = self:pick_value(function(v) return v ~= x and broadcast(v.shape, x.shape) ~= nil end)
    if y then return y end
  end
  if u < 0.85 then
    local shape = rng:chance(0.5) and copy(x.shape) or self:bcast_partner(x.shape)
    if rng:chance(0.3) then
      local s = shape
      shape = x.shape
      if broadcast(s, x.shape) then shape = s end
    end
    local y = self:new_input(shape, dt or (rng:chance(0.6) and x.dtype or self:rand_dtype()))
    if y then return y end
  end
  return x
end

---------------------------------------------------------------- elementwise unary

-- float-only ops (integers and bool compute in float32, as JAX): NumPy function, ulps, domain
-- test on [lo, hi] for safe programs, interval map
local function mono(f) return function(lo, hi) return f(lo), f(hi) end end
local function sinh(x) return (math.exp(x) - math.exp(-x)) / 2 end
local function cosh(x) return (math.exp(x) + math.exp(-x)) / 2 end
local function expm1(x) return math.exp(x) - 1 end
local function erf_bound(lo, hi) return lo < -3 and -1 or math.max(-1, lo * 1.2), hi > 3 and 1 or math.min(1, hi * 1.2) end
local FLOAT_UNARY = {
  exp = {"np.exp", 4, function(lo, hi) return hi < 80 end, mono(math.exp)},
  expm1 = {"np.expm1", 4, function(lo, hi) return hi < 80 end, function(lo, hi) return math.min(-1, expm1(lo)) * 1.01, expm1(hi) end},
  log = {"np.log", 4, function(lo) return lo > 0 end, mono(math.log)},
  log1p = {"np.log1p", 4, function(lo) return lo > -0.9 end, function(lo, hi) return math.log(1 + lo) - 1e-3, math.log(1 + hi) + 1e-3 end},
  sqrt = {"np.sqrt", 1, function(lo) return lo >= 0 end, mono(math.sqrt)},
  rsqrt = {"(lambda v: 1 / np.sqrt(v.astype(np.float64)))", 4, function(lo) return lo > 0 end,
           function(lo, hi) return 1 / math.sqrt(hi), 1 / math.sqrt(lo) end},
  reciprocal = {"np.reciprocal", 1, function(lo, hi) return lo > 0 or hi < 0 end, function(lo, hi) return 1 / hi, 1 / lo end},
  sin = {"np.sin", 4, nil, function() return -1, 1 end},
  cos = {"np.cos", 4, nil, function() return -1, 1 end},
  tan = {"np.tan", 4, function(lo, hi) return lo > -1.4 and hi < 1.4 end, mono(math.tan)},
  asin = {"np.arcsin", 4, function(lo, hi) return lo >= -1 and hi <= 1 end, mono(math.asin)},
  acos = {"np.arccos", 4, function(lo, hi) return lo >= -1 and hi <= 1 end, function(lo, hi) return math.acos(hi), math.acos(lo) end},
  atan = {"np.arctan", 4, nil, mono(math.atan)},
  sinh = {"np.sinh", 4, function(lo, hi) return math.max(-lo, hi) < 80 end, mono(sinh)},
  cosh = {"np.cosh", 4, function(lo, hi) return math.max(-lo, hi) < 80 end,
          function(lo, hi) return 1, cosh(math.max(-lo, hi)) end},
  tanh = {"np.tanh", 4, nil, function(lo, hi) return math.max(-1, math.tanh(lo)), math.min(1, math.tanh(hi)) end},
  erf = {"(lambda v: np.vectorize(math.erf, otypes=[np.float64])(v.astype(np.float64)))", 4, nil, erf_bound},
}
local FLOAT_UNARY_NAMES = {"exp", "expm1", "log", "log1p", "sqrt", "rsqrt", "reciprocal", "sin", "cos", "tan", "asin",
                           "acos", "atan", "sinh", "cosh", "tanh", "erf"}
-- ops that keep integers (bool computes in int32)
local INT_UNARY = {
  neg = {"np.negative", function(lo, hi) return -hi, -lo end},
  abs = {"np.abs", function(lo, hi) if lo >= 0 then return lo, hi end if hi <= 0 then return -hi, -lo end return 0, math.max(-lo, hi) end},
  sign = {"np.sign", function(lo, hi) return lo < 0 and -1 or (lo > 0 and 1 or 0), hi > 0 and 1 or (hi < 0 and -1 or 0) end},
  square = {"np.square", function(lo, hi) local m = math.max(lo * lo, hi * hi) if lo <= 0 and hi >= 0 then return 0, m end return math.min(lo * lo, hi * hi), m end},
  floor = {"np.floor", function(lo, hi) return math.floor(lo), math.floor(hi) end},
  ceil = {"np.ceil", function(lo, hi) return math.ceil(lo), math.ceil(hi) end},
  round = {"np.round", function(lo, hi) return math.floor(lo), math.ceil(hi) end},
}
local INT_UNARY_NAMES = {"neg", "abs", "sign", "square", "floor", "ceil", "round"}

-- the Lua text of hl.op(x, ...) in one of its spellings
function B:call(op, x, rest, method_ok)
  local args = rest and (", " .. rest) or ""
  if method_ok ~= false and self.rng:chance(0.3) then return x .. ":" .. op .. "(" .. (rest or "") .. ")" end
  return "hl." .. op .. "(" .. x .. args .. ")"
end

function B:unary(x)
  local rng = self.rng
  local u = rng:float()
  local dt = x.dtype
  if u < 0.55 then
    local op = rng:pick(FLOAT_UNARY_NAMES)
    local d = FLOAT_UNARY[op]
    local c = FLOAT[dt] and dt or "float32"
    if not self.wild and size(x.shape) ~= 0 and d[3] and not d[3](x.lo, x.hi) then return nil end
    local lo, hi = -INF, INF
    if not x.nan and (self.wild and (not d[3] or d[3](x.lo, x.hi)) or not self.wild) then lo, hi = d[4](x.lo, x.hi) end
    local nan = x.nan or (d[3] and not d[3](x.lo, x.hi))
    if lo ~= lo or hi ~= hi then lo, hi = -INF, INF end
    local lua = op == "neg" and "-" .. x.name or self:call(op, x.name)
    return self:emit(c, copy(x.shape), lo, hi, nan, lua, P(wrap(d[1] .. "(" .. cast(x.name, dt, c) .. ")", c), c, d[2]))
  elseif u < 0.85 then
    local op = rng:pick(INT_UNARY_NAMES)
    local d = INT_UNARY[op]
    local c = dt == "bool" and "int32" or dt
    local lo, hi = d[2](x.lo, x.hi)
    local np
    if INT[c] and (op == "floor" or op == "ceil" or op == "round") then
      np = cast(x.name, dt, c)                               -- integers: the value itself
    elseif op == "sign" and FLOAT[c] then
      -- halua keeps the sign of a zero (sign(-0.0) is -0.0, as JAX), NumPy gives 0.0
      np = string.format("np.where(%s == 0, %s, %s)", x.name, x.name, wrap("np.sign(" .. x.name .. ")", c))
    else
      np = wrap(d[1] .. "(" .. cast(x.name, dt, c) .. ")", c)
    end
    local lua
    if op == "neg" and rng:chance(0.5) then lua = "-" .. x.name else lua = self:call(op, x.name) end
    return self:emit(c, copy(x.shape), lo, hi, x.nan, lua, P(np, c, op == "square" and 1 or 0))
  else
    local op = rng:pick {"isnan", "isinf", "isfinite", "logical_not"}
    return self:emit("bool", copy(x.shape), 0, 1, false, self:call(op, x.name), "np." .. op .. "(" .. x.name .. ")")
  end
end

---------------------------------------------------------------- elementwise binary

local BINARY = {
  add = {"np.add", "+"}, sub = {"np.subtract", "-"}, mul = {"np.multiply", "*"}, div = {"np.true_divide", "/"},
  pow = {"np.power", "^"}, mod = {"np.mod", "%"}, maximum = {"maximum"}, minimum = {"minimum"},
  atan2 = {"np.arctan2"}, floor_divide = {"np.floor_divide"},
  eq = {"np.equal"}, ne = {"np.not_equal"}, lt = {"np.less"}, le = {"np.less_equal"}, gt = {"np.greater"},
  ge = {"np.greater_equal"}, logical_and = {"np.logical_and"}, logical_or = {"np.logical_or"},
  logical_xor = {"np.logical_xor"},
}
local ARITH = {"add", "sub", "mul", "div", "pow", "mod", "maximum", "minimum", "atan2", "floor_divide"}
local COMPARE = {"eq", "ne", "lt", "le", "gt", "ge"}
local LOGICAL = {"logical_and", "logical_or", "logical_xor"}
local IS_LOGICAL = {logical_and = true, logical_or = true, logical_xor = true}
local TO_BOOL = {eq = true, ne = true, lt = true, le = true, gt = true, ge = true, logical_and = true, logical_or = true,
                 logical_xor = true}

-- the dtype halua computes a binary op in, given the promoted dtype t (differential_spec.lua)
local function binary_compute(op, t)
  if (op == "div" or op == "atan2") and not FLOAT[t] then return "float32" end
  if t == "bool" and not (TO_BOOL[op] or op == "add" or op == "mul" or op == "maximum" or op == "minimum") then
    return "int32"
  end
  return t
end

-- [lo, hi] of op over the two intervals, and whether NaN may appear; nil: not in a safe program
local function binary_interval(op, c, x, y, wild)
  local a, b = x, y
  if op == "add" then return a.lo + b.lo, a.hi + b.hi
  elseif op == "sub" then return a.lo - b.hi, a.hi - b.lo
  elseif op == "mul" then return corners(function(p, q) return p * q end, a.lo, a.hi, b.lo, b.hi)
  elseif op == "maximum" then return math.max(a.lo, b.lo), math.max(a.hi, b.hi)
  elseif op == "minimum" then return math.min(a.lo, b.lo), math.min(a.hi, b.hi)
  elseif op == "div" then
    if has_zero(b) then return nil end
    return corners(function(p, q) return p / q end, a.lo, a.hi, b.lo, b.hi)
  elseif op == "atan2" then
    -- atan2(+-0, negative) is +-pi: the sign of a zero matters, and a jitted pipeline may not keep it
    if b.lo <= 0 and has_zero(a) then return nil end
    return -3.1416, 3.1416
  elseif op == "mod" then
    if FLOAT[c] and has_zero(b) then return nil end
    local m = math.max(math.abs(b.lo), math.abs(b.hi))
    return math.min(0, -m), math.max(0, m)
  elseif op == "floor_divide" then
    if FLOAT[c] then
      if has_zero(b) then return nil end
      local lo, hi = corners(function(p, q) return p / q end, a.lo, a.hi, b.lo, b.hi)
      return math.floor(lo) - 1, math.ceil(hi) + 1
    end
    local m = math.max(math.abs(a.lo), math.abs(a.hi))
    return -m - 1, m + 1
  elseif op == "pow" then
    if FLOAT[c] then
      if a.lo > 0 then
        local lo, hi = corners(function(p, q) return q * math.log(p) end, a.lo, a.hi, b.lo, b.hi)
        if hi > 80 then return nil end
        return math.exp(lo), math.exp(hi)
      end
      -- a base that may be negative or 0: integral exponents only, positive
      if not (b.const and b.lo == math.floor(b.lo) and b.lo >= 0 and b.lo <= 4) then return nil end
      local m = mag(a) ^ b.lo
      return -m, m
    end
    if b.lo < 0 or b.hi > 4 then return nil end               -- NumPy refuses negative integer powers
    local m = math.max(1, mag(a)) ^ b.hi
    return -m, m
  end
end

-- a weakly typed Lua number for x's dtype: integers for integer and bool arrays, values every
-- float dtype holds exactly for floats
function B:const_for(dt, op)
  local rng = self.rng
  if op == "pow" then
    if FLOAT[dt] then return rng:pick {2, 3, 0.5, -1, 2, 1.5, -0.5} end
    return rng:int(0, 3)
  end
  if op == "logical_and" or op == "logical_or" or op == "logical_xor" then return nil end
  if dt == "uint8" or dt == "bool" then return rng:int(0, 4) end
  if FLOAT[dt] and rng:chance(0.5) then return rng:pick {0.5, -0.5, 1.5, 2.25, -3.75, 0.125, 10} end
  return rng:int(-4, 4)
end

function B:binary(x)
  local rng = self.rng
  local op = rng:weighted {{62, rng:pick(ARITH)}, {26, rng:pick(COMPARE)}, {12, rng:pick(LOGICAL)}}
  local fn, sym = BINARY[op][1], BINARY[op][2]
  local k = not IS_LOGICAL[op] and rng:chance(0.3) and self:const_for(x.dtype, op)
  local lua, np, c, shape, lo, hi
  local nan = x.nan
  if k then
    -- a weakly typed number takes x's dtype (bool computes in int32)
    local t = x.dtype == "bool" and "int32" or x.dtype
    c = binary_compute(op, t)
    local left = op ~= "pow" and rng:chance(0.3)
    local kv = {lo = k, hi = k, const = true}
    if left and op == "pow" then left = false end
    if left then lo, hi = binary_interval(op, c, kv, x, self.wild) else lo, hi = binary_interval(op, c, x, kv, self.wild) end
    if not lo and not self.wild then return nil end
    if not lo then lo, hi, nan = -INF, INF, true end
    local ks = lua_num(k)
    local kn = NPT[c] .. "(" .. py_num(k) .. ")"
    local xa, ka = x.name, ks
    if left then xa, ka = ks, x.name end
    if sym and rng:chance(0.6) then
      lua = (left and ks or x.name) .. " " .. sym .. " " .. (left and x.name or (k < 0 and "(" .. ks .. ")" or ks))
    else
      lua = "hl." .. op .. "(" .. xa .. ", " .. ka .. ")"
    end
    local xc = cast(x.name, x.dtype, c)
    np = fn .. "(" .. (left and kn .. ", " .. xc or xc .. ", " .. kn) .. ")"
    shape = copy(x.shape)
  else
    local y = self:partner(x)
    shape = broadcast(x.shape, y.shape)
    if not shape then return nil end
    local a, b = x, y
    if rng:chance(0.3) then a, b = y, x end
    local t = promote(a.dtype, b.dtype)
    c = binary_compute(op, t)
    nan = a.nan or b.nan
    if not TO_BOOL[op] then
      lo, hi = binary_interval(op, c, a, b, self.wild)
      if not lo and not self.wild then return nil end
      if not lo then lo, hi, nan = -INF, INF, true end
    end
    if sym and rng:chance(0.5) then lua = a.name .. " " .. sym .. " " .. b.name
    elseif rng:chance(0.3) then lua = a.name .. ":" .. op .. "(" .. b.name .. ")"
    else lua = "hl." .. op .. "(" .. a.name .. ", " .. b.name .. ")" end
    if IS_LOGICAL[op] then
      np = fn .. "(" .. a.name .. ", " .. b.name .. ")"
    else
      np = fn .. "(" .. cast(a.name, a.dtype, c) .. ", " .. cast(b.name, b.dtype, c) .. ")"
    end
  end
  if TO_BOOL[op] then return self:emit("bool", shape, 0, 1, false, lua, np) end
  -- exact ops (correctly rounded in both) move by a unit in the last place, as a jitted
  -- pipeline may contract or reassociate them; pow and atan2 are transcendental
  local ulps = (op == "pow" or op == "atan2") and 4 or (op == "maximum" or op == "minimum") and 0 or 1
  np = wrap(np, c)
  return self:emit(c, shape, lo, hi, nan, lua, P(np, c, ulps))
end

-- where(c, x, y): any dtype is a condition (nonzero); the branches promote
function B:where(x)
  local rng = self.rng
  local cond = self:pick_value(function(v) return v.dtype == "bool" and broadcast(v.shape, x.shape) end)
  if not cond or rng:chance(0.2) then
    cond = self:pick_value(function(v) return broadcast(v.shape, x.shape) end) or x
  end
  local lua, np, t, shape, lo, hi, nan
  if rng:chance(0.3) then
    -- a Lua number branch takes x's dtype (bool: int32)
    local k = self:const_for(x.dtype, "add")
    t = x.dtype == "bool" and "int32" or x.dtype
    shape = broadcast(cond.shape, x.shape)
    local left = rng:chance(0.5)
    local xs, ks = x.name, lua_num(k)
    local xc, kn = cast(x.name, x.dtype, t), NPT[t] .. "(" .. py_num(k) .. ")"
    lua = "hl.where(" .. cond.name .. ", " .. (left and ks .. ", " .. xs or xs .. ", " .. ks) .. ")"
    np = "np.where(" .. cond.name .. ".astype(bool), " .. (left and kn .. ", " .. xc or xc .. ", " .. kn) .. ")"
    lo, hi, nan = math.min(x.lo, k), math.max(x.hi, k), x.nan
  else
    local y = self:partner(x)
    shape = broadcast(cond.shape, x.shape, y.shape)
    if not shape then return nil end
    t = promote(x.dtype, y.dtype)
    lua = "hl.where(" .. cond.name .. ", " .. x.name .. ", " .. y.name .. ")"
    np = "np.where(" .. cond.name .. ".astype(bool), " .. cast(x.name, x.dtype, t) .. ", " .. cast(y.name, y.dtype, t) .. ")"
    lo, hi, nan = math.min(x.lo, y.lo), math.max(x.hi, y.hi), x.nan or y.nan
  end
  return self:emit(t, shape, lo, hi, nan, lua, wrap(np, t))
end

-- clip(x, lo, hi) with Lua numbers: maximum, then minimum (bool computes in int32)
function B:clip(x)
  local rng = self.rng
  local c = x.dtype == "bool" and "int32" or x.dtype
  local a = self:const_for(x.dtype, "add")
  local b = a + rng:int(0, 4)
  if rng:chance(0.15) then a = nil end
  if a and rng:chance(0.15) then b = nil end
  local e = cast(x.name, x.dtype, c)
  local lo, hi = x.lo, x.hi
  if a then e = "maximum(" .. e .. ", " .. NPT[c] .. "(" .. py_num(a) .. "))"; lo, hi = math.max(lo, a), math.max(hi, a) end
  if b then e = "minimum(" .. e .. ", " .. NPT[c] .. "(" .. py_num(b) .. "))"; lo, hi = math.min(lo, b), math.min(hi, b) end
  local lua = self:call("clip", x.name, (a and lua_num(a) or "nil") .. (b and ", " .. lua_num(b) or ""))
  return self:emit(c, copy(x.shape), lo, hi, x.nan, lua, wrap(e, c))
end

---------------------------------------------------------------- reductions and scans

-- a random axis argument for rank r: nil, one axis (either sign) or a table of them
function B:rand_axes(r, single)
  local rng = self.rng
  if r == 0 or rng:chance(0.2) then return nil end
  local function one(a) return rng:chance(0.5) and a or a - r - 1 end
  if single or rng:chance(0.5) then return one(rng:int(1, r)) end
  local t, used = {}, {}
  for _ = 1, rng:int(1, r) do
    local a = rng:int(1, r)
    if not used[a] then used[a] = true; t[#t + 1] = one(a) end
  end
  return t
end
local function norm(a, r) return a > 0 and a or r + a + 1 end
-- the reduced count and the result shape
local function reduced(shape, axes, keep)
  local red = {}
  if axes == nil then for i = 1, #shape do red[i] = true end
  elseif type(axes) == "number" then red[norm(axes, #shape)] = true
  else for _, a in ipairs(axes) do red[norm(a, #shape)] = true end end
  local n, out = 1, {}
  for i, e in ipairs(shape) do
    if red[i] then n = n * e; if keep then out[#out + 1] = 1 end else out[#out + 1] = e end
  end
  return n, out
end

local REDUCTIONS = {"sum", "prod", "mean", "var", "std", "max", "min", "argmax", "argmin", "all", "any", "logsumexp"}

function B:reduction(x)
  local rng = self.rng
  local op = rng:pick(REDUCTIONS)
  local dt, r = x.dtype, #x.shape
  local arg = op == "argmax" or op == "argmin"
  local axes = self:rand_axes(r, arg)
  local keep = rng:chance(0.35)
  local n, shape = reduced(x.shape, axes, keep)
  if arg and axes == nil then
    shape = {}
    if keep then for i = 1, r do shape[i] = 1 end end
  end
  local ax, kd = npaxes(axes), keep and "True" or "False"
  local args = "axis=" .. ax .. ", keepdims=" .. kd
  local lua
  local la = lua_axes(axes)
  if keep then lua = self:call(op, x.name, la .. ", true")
  elseif axes == nil and rng:chance(0.5) then lua = self:call(op, x.name)
  else lua = self:call(op, x.name, la) end
  local X = x.name
  local nan = x.nan
  if op == "sum" or op == "prod" then
    -- bool, uint8 and int8 give int32 (JAX's rule; NumPy gives int64); floats accumulate
    local rdt = SMALL_INT[dt] and "int32" or dt
    local lo, hi
    if op == "sum" then lo, hi = n * math.min(x.lo, 0), n * math.max(x.hi, 0)
      if n == 0 then lo, hi = 0, 0 end
    else
      if n > 6 and mag(x) > 1.5 then return nil end
      local m = math.max(1, mag(x)) ^ n
      lo, hi = -m, m
    end
    if FLOAT[dt] then
      local e = eps_acc(dt)
      local v = wrap(string.format("np.%s(%s, %s)", op, f64(X), args), rdt)
      if op == "sum" then
        -- float32 sums in float32 in halua's order, the 2-byte floats in float64, rounded once
        local bound = (dt == "float32" or dt == "float64") and string.format("%s * absum(%s, %s)", py_num(2 * n * e), X, args) or nil
        return self:emit(rdt, shape, lo, hi, nan, lua, P(v, rdt, 1, bound))
      end
      return self:emit(rdt, shape, lo, hi, nan, lua, P(v, rdt, 2 + math.ceil(2 * n * e / EPS[rdt])))
    end
    return self:emit(rdt, shape, lo, hi, nan, lua, string.format("np.%s(%s, %s, dtype=%s)", op, X, args, NPT[rdt]))
  elseif op == "max" or op == "min" then
    if n == 0 then return nil end                            -- NumPy and halua refuse
    return self:emit(dt, shape, x.lo, x.hi, nan, lua, wrap(string.format("np.%s(%s, %s)", op, X, args), dt))
  elseif arg then
    if n == 0 then return nil end
    return self:emit("int64", shape, 1, n, false, lua, string.format("np.%s(%s, %s) + 1", op, X, args))
  elseif op == "all" or op == "any" then
    return self:emit("bool", shape, 0, 1, false, lua, string.format("np.%s(%s, %s)", op, X, args))
  end
  -- mean, var, std, logsumexp: integers give float32; 2-byte floats compute in float32, rounded once
  local rdt = FLOAT[dt] and dt or "float32"
  local cdt = (dt == "float64") and "float64" or "float32"
  local e = eps_acc(cdt)
  if n == 0 and not self.wild and op ~= "logsumexp" then return nil end     -- NaN
  if n == 0 and not self.wild then return nil end                           -- -inf
  local Xc = cast(X, dt, cdt)
  if op == "mean" then
    local bound = string.format("%s * absum(%s, %s)", py_num(2 * e), Xc, args)
    return self:emit(rdt, shape, x.lo, x.hi, nan, lua,
                     P(wrap(P(wrap(string.format("np.mean(%s, %s)", f64(Xc), args), cdt), cdt, 1, bound), rdt), rdt, 0))
  elseif op == "var" or op == "std" then
    -- halua's composite: d = x - mean(x, keepdims); mean(d * d) (then sqrt): each step rounded
    local m, d, v = self:tmp(), self:tmp(), self:tmp()
    local w = x.hi - x.lo
    local steps = {
      string.format("%s := %s", m, P(wrap(string.format("np.mean(%s, axis=%s, keepdims=True)", f64(Xc), ax), cdt), cdt, 1,
                                     string.format("%s * absum(%s, axis=%s, keepdims=True)", py_num(2 * e), Xc, ax))),
      string.format("%s := %s", d, P(wrap(Xc .. " - " .. m, cdt), cdt, 1)),
      string.format("%s := %s", v, P(wrap(string.format("np.mean(%s, %s)", f64(P(wrap(d .. " * " .. d, cdt), cdt, 1)), args), cdt), cdt, 1,
                                     string.format("%s * absum(%s * %s, %s)", py_num(2 * e), d, d, args))),
    }
    local final = op == "var" and v or P(wrap("np.sqrt(" .. v .. ")", cdt), cdt, 1)
    steps[#steps + 1] = P(wrap(final, rdt), rdt, 0)
    return self:emit(rdt, shape, 0, op == "var" and w * w or w, nan, lua, steps)
  else   -- logsumexp: log(sum(exp(x - max))) + max, in float64 here
    if n == 0 and not self.wild then return nil end
    local lo = x.lo
    local hi = x.hi + math.log(math.max(n, 1))
    return self:emit(rdt, shape, lo, hi, nan, lua,
                     P(wrap(P(wrap(string.format("lse(%s, %s)", Xc, args), cdt), cdt, 8,
                              string.format("%s * (1 + np.abs(lse(%s, %s)))", py_num(4 * n * e), Xc, args)), rdt), rdt, 0))
  end
end

function B:scan(x)
  local rng = self.rng
  local op = rng:chance(0.75) and "cumsum" or "cumprod"
  local dt = x.dtype
  local axis = #x.shape > 0 and rng:chance(0.8) and (rng:chance(0.5) and rng:int(1, #x.shape) or -rng:int(1, #x.shape)) or nil
  local n = axis and x.shape[norm(axis, #x.shape)] or size(x.shape)
  local shape = axis and copy(x.shape) or {size(x.shape)}
  local rdt = SMALL_INT[dt] and "int32" or dt
  local lo, hi
  if op == "cumsum" then lo, hi = math.min(0, x.lo) * n, math.max(0, x.hi) * n
    lo, hi = math.min(lo, x.lo), math.max(hi, x.hi)
  else
    if n > 6 and mag(x) > 1.5 then return nil end
    local m = math.max(1, mag(x)) ^ math.max(n, 1)
    lo, hi = -m, m
  end
  local ax = axis and tostring(npax(axis)) or "None"
  local lua = axis and self:call(op, x.name, tostring(axis)) or self:call(op, x.name)
  local np
  if FLOAT[dt] then
    -- log-step scans, each partial result rounded to dt
    local e = EPS[dt]
    local v = wrap(string.format("np.%s(%s, axis=%s)", op, f64(x.name), ax), dt)
    if op == "cumsum" then
      np = P(v, dt, 1, string.format("%s * np.cumsum(np.abs(%s), axis=%s)", py_num(2 * n * e), f64(x.name), ax))
    else
      np = P(v, dt, 2 + 2 * n)
    end
  else
    np = string.format("np.%s(%s, axis=%s, dtype=%s)", op, x.name, ax, NPT[rdt])
  end
  return self:emit(rdt, shape, lo, hi, x.nan, lua, np)
end

---------------------------------------------------------------- shape ops (exact)

-- a random shape with n elements (n > 0)
function B:factor_shape(n)
  local rng = self.rng
  local s = {}
  while n > 1 and #s < 4 do
    local ds = {}
    for d = 2, n do if n % d == 0 then ds[#ds + 1] = d end end
    local d = rng:pick(ds)
    s[#s + 1] = d
    n = n / d
    if rng:chance(0.25) then s[#s + 1] = 1 end
  end
  if n > 1 then s[#s + 1] = n end
  local p = rng:shuffled(#s)
  local t = {}
  for i, j in ipairs(p) do t[i] = s[j] end
  return t
end

-- a random slice spec for x[{...}] and its NumPy form (differential_spec.lua's)
function B:rand_slice(shape, name)
  local rng = self.rng
  local spec, py, out = {}, {}, {}
  for i, n in ipairs(shape) do
    local u = rng:float()
    if n == 0 or u < 0.25 then
      spec[i], py[i] = "{}", ":"
      out[#out + 1] = n
    elseif u < 0.45 then
      local k = rng:chance(0.5) and rng:int(1, n) or -rng:int(1, n)
      spec[i], py[i] = tostring(k), tostring(npax(k))
    else
      local a, b = rng:int(1, n), rng:int(1, n)
      local step = u < 0.75 and 1 or (rng:chance(0.5) and rng:int(1, 2) or -rng:int(1, 2))
      if (step > 0 and a > b) or (step < 0 and a < b) then a, b = b, a end
      local a0, b0 = a - 1, b - 1
      local sa = rng:chance(0.3) and a - n - 1 or a
      local sb = rng:chance(0.3) and b - n - 1 or b
      if step == 1 and rng:chance(0.5) then spec[i] = "{" .. sa .. ", " .. sb .. "}"
      else spec[i] = "{" .. sa .. ", " .. sb .. ", " .. step .. "}" end
      py[i] = string.format("%d:%s:%d", a0, step > 0 and tostring(b0 + 1) or (b0 == 0 and "None" or tostring(b0 - 1)), step)
      out[#out + 1] = math.floor(math.abs(b - a) / math.abs(step)) + 1
    end
  end
  local index = #py > 0 and table.concat(py, ",") or "()"
  return "{" .. table.concat(spec, ", ") .. "}", name .. "[" .. index .. "]", out, "np.s_[" .. index .. "]"
end

local SHAPE_OPS = {"reshape", "transpose", "T", "flatten", "expand_dims", "squeeze", "broadcast_to", "slice", "index",
                   "concatenate", "stack", "flip", "tile", "repeat", "pad", "split", "sort", "astype", "take"}

function B:shape_op(x)
  local rng = self.rng
  local op = rng:pick(SHAPE_OPS)
  local dt, s, r, X = x.dtype, x.shape, #x.shape, x.name
  local function keep(shape, lua, np) return self:emit(dt, shape, x.lo, x.hi, x.nan, lua, np) end
  if op == "reshape" then
    local n = size(s)
    local target
    if n == 0 then target = rng:chance(0.5) and {0, rng:int(1, 3)} or {rng:int(1, 2), 0}
    else target = self:factor_shape(n) end
    local spelled = copy(target)
    if #target > 0 and n > 0 and rng:chance(0.4) then spelled[rng:int(1, #target)] = -1 end
    return keep(target, self:call("reshape", X, lua_table(spelled)), "np.reshape(" .. X .. ", " .. pylist(spelled) .. ")")
  elseif op == "transpose" then
    if rng:chance(0.3) then
      local t = {}
      for i = 1, r do t[i] = s[r - i + 1] end
      return keep(t, self:call("transpose", X), "np.transpose(" .. X .. ")")
    end
    local p = rng:shuffled(r)
    local q, t, spelled = {}, {}, {}
    for i, v in ipairs(p) do q[i] = v - 1; t[i] = s[v]; spelled[i] = rng:chance(0.3) and v - r - 1 or v end
    return keep(t, "hl.transpose(" .. X .. ", " .. lua_table(spelled) .. ")", "np.transpose(" .. X .. ", " .. pylist(q) .. ")")
  elseif op == "T" then
    local t = {}
    for i = 1, r do t[i] = s[r - i + 1] end
    return keep(t, X .. ".T", X .. ".T")
  elseif op == "flatten" then
    return keep({size(s)}, self:call("flatten", X), X .. ".reshape(-1)")
  elseif op == "expand_dims" then
    if r >= 5 then return nil end
    local axis = rng:chance(0.5) and rng:int(1, r + 1) or -rng:int(1, r + 1)
    local t = copy(s)
    table.insert(t, norm(axis, r + 1), 1)
    return keep(t, self:call("expand_dims", X, tostring(axis)), "np.expand_dims(" .. X .. ", " .. npax(axis) .. ")")
  elseif op == "squeeze" then
    local ones, t = {}, {}
    for i, e in ipairs(s) do if e == 1 then ones[#ones + 1] = rng:chance(0.5) and i or i - r - 1 end end
    if #ones == 0 or rng:chance(0.3) then
      for _, e in ipairs(s) do if e ~= 1 then t[#t + 1] = e end end
      return keep(t, self:call("squeeze", X), "np.squeeze(" .. X .. ")")
    end
    local axes = rng:chance(0.5) and ones[1] or ones
    local drop = {}
    for _, a in ipairs(type(axes) == "table" and axes or {axes}) do drop[norm(a, r)] = true end
    for i, e in ipairs(s) do if not drop[i] then t[#t + 1] = e end end
    return keep(t, self:call("squeeze", X, lua_axes(axes)), "np.squeeze(" .. X .. ", axis=" .. npaxes(axes) .. ")")
  elseif op == "broadcast_to" then
    local t = {}
    for _ = 1, rng:int(0, math.max(0, 4 - r)) do t[#t + 1] = rng:int(0, 3) end
    for _, e in ipairs(s) do t[#t + 1] = (e == 1 and rng:chance(0.6)) and rng:int(0, 3) or e end
    return keep(t, self:call("broadcast_to", X, lua_table(t)), "np.broadcast_to(" .. X .. ", " .. pylist(t) .. ")")
  elseif op == "slice" then
    if r == 0 then return nil end
    local spec, py, t = self:rand_slice(s, X)
    return keep(t, X .. "[" .. spec .. "]", py)
  elseif op == "index" then
    if r == 0 or s[1] == 0 then return nil end
    local i = rng:chance(0.5) and rng:int(1, s[1]) or -rng:int(1, s[1])
    local t = {}
    for j = 2, r do t[#t + 1] = s[j] end
    return keep(t, X .. "[" .. i .. "]", X .. "[" .. npax(i) .. "]")
  elseif op == "concatenate" or op == "stack" then
    if op == "concatenate" and r == 0 then return nil end
    if op == "stack" and r >= 5 then return nil end
    local axis = op == "concatenate" and rng:int(1, r) or rng:int(1, r + 1)
    -- partners: earlier values of the same shape (concatenate: but along axis), or a new input
    local function fits(v)
      if #v.shape ~= r or v == x then return false end
      for i = 1, r do if i ~= axis or op == "stack" then if v.shape[i] ~= s[i] then return false end end end
      return true
    end
    local parts = {x}
    for _ = 1, rng:int(1, 2) do
      local y = rng:chance(0.5) and self:pick_value(fits) or nil
      if not y then
        local t = copy(s)
        if op == "concatenate" then t[axis] = rng:int(0, 3) end
        y = self:new_input(t, rng:chance(0.7) and dt or self:rand_dtype()) or x
      end
      table.insert(parts, rng:int(1, #parts + 1), y)
    end
    local t, lo, hi, nan = parts[1].dtype, INF, -INF, false
    local names, npn = {}, {}
    for i, v in ipairs(parts) do
      t = promote(t, v.dtype)
      lo, hi, nan = math.min(lo, v.lo), math.max(hi, v.hi), nan or v.nan
      names[i] = v.name
    end
    for i, v in ipairs(parts) do npn[i] = cast(v.name, v.dtype, t) end
    local out = copy(s)
    if op == "concatenate" then
      out[axis] = 0
      for _, v in ipairs(parts) do out[axis] = out[axis] + v.shape[axis] end
    else
      table.insert(out, axis, #parts)
    end
    local spelled = rng:chance(0.4) and axis - (op == "stack" and r + 1 or r) - 1 or axis
    return self:emit(t, out, lo, hi, nan, "hl." .. op .. "(" .. lua_table(names) .. ", " .. spelled .. ")",
                     wrap("np." .. op .. "([" .. table.concat(npn, ", ") .. "], axis=" .. npax(spelled) .. ")", t))
  elseif op == "flip" then
    local axes = self:rand_axes(r)
    return keep(copy(s), self:call("flip", X, axes and lua_axes(axes) or nil), "np.flip(" .. X .. ", axis=" .. npaxes(axes) .. ")")
  elseif op == "tile" then
    if r > 4 then return nil end
    local reps = {}
    for i = 1, rng:int(1, math.max(r, 1)) do reps[i] = rng:int(0, 3) end
    local t = {}
    local nd = math.max(r, #reps)
    for i = 1, nd do t[i] = (s[i - (nd - r)] or 1) * (reps[i - (nd - #reps)] or 1) end
    if rng:chance(0.3) then
      local k = rng:int(1, 3)
      t = copy(s)
      if r == 0 then t = {k} else t[r] = t[r] * k end
      return keep(t, self:call("tile", X, tostring(k)), "np.tile(" .. X .. ", " .. k .. ")")
    end
    return keep(t, self:call("tile", X, lua_table(reps)), "np.tile(" .. X .. ", " .. pylist(reps) .. ")")
  elseif op == "repeat" then
    local k = rng:int(0, 3)
    local axis = r > 0 and rng:chance(0.7) and rng:int(1, r) or nil
    local t
    if axis then t = copy(s); t[axis] = t[axis] * k else t = {size(s) * k} end
    return keep(t, "hl[\"repeat\"](" .. X .. ", " .. k .. (axis and ", " .. axis or "") .. ")",
                string.format("np.repeat(%s, %d, axis=%s)", X, k, axis and tostring(axis - 1) or "None"))
  elseif op == "pad" then
    if r == 0 then return nil end
    local width, w, t = nil, nil, copy(s)
    local u = rng:float()
    if u < 0.3 then
      width = rng:int(0, 2); w = tostring(width)
      for i = 1, r do t[i] = t[i] + 2 * width end
      width = tostring(width)
    elseif u < 0.6 then
      local p = {rng:int(0, 2), rng:int(0, 2)}
      w = pylist(p)
      for i = 1, r do t[i] = t[i] + p[1] + p[2] end
      width = lua_table(p)
    else
      local lw, pw = {}, {}
      for i = 1, r do
        local p = {rng:int(0, 2), rng:int(0, 2)}
        lw[i], pw[i] = lua_table(p), pylist(p)
        t[i] = t[i] + p[1] + p[2]
      end
      width, w = lua_table(lw), pylist(pw)
    end
    local v = dt == "bool" and 1 or self:const_for(dt, "add")
    return self:emit(dt, t, math.min(x.lo, v), math.max(x.hi, v), x.nan, self:call("pad", X, width .. ", " .. lua_num(v)),
                     string.format("np.pad(%s, %s, constant_values=%s(%s))", X, w, NPT[dt], py_num(v)))
  elseif op == "split" then
    if r == 0 then return nil end
    local axis = rng:int(1, r)
    local n = s[axis]
    local how, npw, bounds
    if n > 0 and rng:chance(0.5) then
      local ds = {}
      for d = 1, n do if n % d == 0 then ds[#ds + 1] = d end end
      local k = rng:pick(ds)
      how, npw = tostring(k), tostring(k)
      bounds = {}
      for i = 0, k do bounds[#bounds + 1] = i * n / k end
    else
      local pos, npos = {}, {}
      bounds = {0}
      for p = 2, n do if rng:chance(0.4) then pos[#pos + 1] = p; npos[#npos + 1] = p - 1; bounds[#bounds + 1] = p - 1 end end
      bounds[#bounds + 1] = n
      how, npw = lua_table(pos), "[" .. table.concat(npos, ",") .. "]"
    end
    local part = rng:int(1, #bounds - 1)
    local t = copy(s)
    t[axis] = bounds[part + 1] - bounds[part]
    return keep(t, "hl.split(" .. X .. ", " .. how .. ", " .. axis .. ")[" .. part .. "]",
                string.format("np.split(%s, %s, axis=%d)[%d]", X, npw, axis - 1, part - 1))
  elseif op == "sort" then
    if r == 0 then return nil end
    local axis = rng:chance(0.3) and nil or (rng:chance(0.5) and rng:int(1, r) or -rng:int(1, r))
    local ax = axis and npax(axis) or -1
    if rng:chance(0.3) then
      return self:emit("int64", copy(s), 1, math.max(1, s[axis and norm(axis, r) or r]), false,
                       self:call("argsort", X, axis and tostring(axis) or nil),
                       string.format("np.argsort(%s, axis=%d, kind='stable') + 1", X, ax))
    end
    return keep(copy(s), self:call("sort", X, axis and tostring(axis) or nil),
                string.format("np.sort(%s, axis=%d, kind='stable')", X, ax))
  elseif op == "astype" then
    local to = self:rand_dtype()
    if to == dt then return nil end
    local lo, hi, nan = x.lo, x.hi, x.nan
    if to == "bool" then lo, hi, nan = 0, 1, false
    elseif INT[to] and FLOAT[dt] then
      -- float to integer truncates toward zero (C's and NumPy's rule); NaN, inf and values out of
      -- range are undefined in both, so only values the target holds
      local rg = RANGE[to]
      if x.nan or x.lo <= rg[1] - 1 or x.hi >= rg[2] + 1 then return nil end
      lo, hi = math.ceil(x.lo) - 1, math.floor(x.hi) + 1
      lo, hi = math.max(lo, rg[1]), math.min(hi, rg[2])
    elseif INT[to] and INT[dt] then
      local rg = RANGE[to]
      -- integers out of range wrap (documented) where both sides define it
      if (lo < rg[1] or hi > rg[2]) and to ~= "int8" and to ~= "uint8" then return nil end
    end
    -- the NumPy form: float values round to `to` once; bool from values (NaN is true)
    local e = to == "bool" and "(" .. X .. " != 0)" or wrap(X, to)
    return self:emit(to, copy(s), lo, hi, nan, self:call("astype", X, "\"" .. to .. "\""), P(e, to, 0))
  elseif op == "take" then
    if r == 0 then return nil end
    local axis = rng:int(1, r)
    local n = s[axis]
    if n == 0 then return nil end
    local idx, npi = {}, {}
    for i = 1, rng:int(0, 4) do
      -- (take's indices are 1-based and positive: a negative one is an error, as documented)
      local k = rng:int(1, n)
      idx[i], npi[i] = k, tostring(k - 1)
    end
    local t = copy(s)
    t[axis] = #idx
    local idt = rng:pick {"int32", "int64", "int8"}
    if idt == "int8" and n > 120 then idt = "int32" end
    return keep(t, string.format("hl.take(%s, hl.array(%s, \"%s\"), %d)", X, lua_table(idx), idt, axis),
                string.format("np.take(%s, np.array([%s], dtype=np.int64), axis=%d)", X, table.concat(npi, ","), axis - 1))
  end
end

-- x:at(index):set(v) and :add :mul :min :max with a Lua number: the dtype stays x's (the
-- value computed as a weak number with x, bool in int32, and converted back as astype does)
function B:update(x)
  local rng = self.rng
  local dt, r = x.dtype, #x.shape
  if r == 0 then return nil end
  local spec, _, _, idx = self:rand_slice(x.shape, x.name)
  local op = rng:pick {"set", "add", "mul", "min", "max"}
  local k = self:const_for(dt, "add")
  local c = dt == "bool" and "int32" or dt
  local lo, hi = math.min(x.lo, k), math.max(x.hi, k)
  local t = self:tmp()
  local np
  local cur = t .. "[" .. idx .. "]"
  if op == "set" then np = NPT[c] .. "(" .. py_num(k) .. ")"
  else
    local fn = ({add = "np.add", mul = "np.multiply", min = "np.minimum", max = "np.maximum"})[op]
    np = fn .. "(" .. cast(cur, dt, c) .. ", " .. NPT[c] .. "(" .. py_num(k) .. "))"
    if op == "add" then lo, hi = x.lo + math.min(k, 0), x.hi + math.max(k, 0)
    elseif op == "mul" then lo, hi = corners(function(p, q) return p * q end, x.lo, x.hi, k, k); lo, hi = math.min(lo, x.lo), math.max(hi, x.hi) end
  end
  local steps = {
    t .. " := " .. x.name .. ".copy()",
    t .. ".__setitem__(" .. idx .. ", " .. wrap(np, dt) .. ")",
    P(t, dt, (op == "add" or op == "mul") and 1 or 0),
  }
  if dt == "bool" and op ~= "set" then lo, hi = 0, 1 end
  return self:emit(dt, copy(x.shape), lo, hi, x.nan, x.name .. ":at(" .. spec .. "):" .. op .. "(" .. lua_num(k) .. ")", steps)
end

-- hl.nn's composites on floats: relu, sigmoid, softmax and log_softmax (as halua writes them)
function B:nn(x)
  local rng = self.rng
  local dt, r = x.dtype, #x.shape
  if not FLOAT[dt] then return nil end
  local op = rng:pick {"relu", "sigmoid", "softmax", "log_softmax"}
  local X = x.name
  if op == "relu" then
    return self:emit(dt, copy(x.shape), math.max(0, x.lo), math.max(0, x.hi), x.nan, "hl.nn.relu(" .. X .. ")",
                     wrap("maximum(" .. X .. ", " .. NPT[dt] .. "(0))", dt))
  elseif op == "sigmoid" then
    -- 0.5 * tanh(0.5 * x) + 0.5, each step rounded
    local e = P(wrap("np.multiply(" .. NPT[dt] .. "(0.5), " .. X .. ")", dt), dt, 1)
    e = P(wrap("np.tanh(" .. e .. ")", dt), dt, 4)
    e = P(wrap("np.multiply(" .. NPT[dt] .. "(0.5), " .. e .. ")", dt), dt, 1)
    e = P(wrap("np.add(" .. e .. ", " .. NPT[dt] .. "(0.5))", dt), dt, 1)
    return self:emit(dt, copy(x.shape), 0, 1, x.nan, "hl.nn.sigmoid(" .. X .. ")", e)
  end
  if r == 0 then return nil end
  local axis = rng:chance(0.3) and nil or (rng:chance(0.5) and rng:int(1, r) or -rng:int(1, r))
  local n = x.shape[axis and norm(axis, r) or r]
  if n == 0 then return nil end                              -- a max over nothing: refused
  local ax = tostring(axis and npax(axis) or -1)
  local lua = "hl.nn." .. op .. "(" .. X .. (axis and ", " .. axis or "") .. ")"
  if op == "softmax" then
    -- m = max(x, axis, keepdims) (0 where not finite); e = exp(x - m); e / sum(e, axis, keepdims)
    if not self.wild and x.hi - x.lo > 60 then return nil end
    local m, d, e, sm = self:tmp(), self:tmp(), self:tmp(), self:tmp()
    local steps = {
      m .. " := " .. wrap(string.format("np.max(%s, axis=%s, keepdims=True)", X, ax), dt),
      m .. " := " .. wrap(string.format("np.where(np.isfinite(%s), %s, 0)", m, m), dt),
      d .. " := " .. P(wrap(X .. " - " .. m, dt), dt, 1),
      e .. " := " .. P(wrap("np.exp(" .. d .. ")", dt), dt, 4),
      sm .. " := " .. P(wrap(string.format("np.sum(%s, axis=%s, keepdims=True)", f64(e), ax), dt), dt, 1,
                        dt ~= "float16" and dt ~= "bfloat16" and string.format("%s * absum(%s, axis=%s, keepdims=True)", py_num(2 * n * eps_acc(dt)), e, ax) or nil),
      P(wrap(e .. " / " .. sm, dt), dt, 1),
    }
    return self:emit(dt, copy(x.shape), 0, 1, x.nan, lua, steps)
  end
  -- log_softmax: x - logsumexp(x, axis, keepdims)
  local cdt = dt == "float64" and "float64" or "float32"
  local l = self:tmp()
  local steps = {
    l .. " := " .. P(wrap(P(wrap(string.format("lse(%s, axis=%s, keepdims=True)", cast(X, dt, cdt), ax), cdt), cdt, 8,
                            string.format("%s * (1 + np.abs(lse(%s, axis=%s, keepdims=True)))", py_num(4 * n * eps_acc(cdt)), cast(X, dt, cdt), ax)), dt), dt, 0),
    P(wrap(X .. " - " .. l, dt), dt, 1),
  }
  return self:emit(dt, copy(x.shape), x.lo - x.hi - math.log(n) - 1, 0, x.nan, lua, steps)
end

---------------------------------------------------------------- matmul

-- NumPy's matmul shape (nil when the shapes do not multiply)
local function matmul_shape(a, b)
  if #a == 0 or #b == 0 then return nil end
  local A, Bs = copy(a), copy(b)
  local va, vb = #A == 1, #Bs == 1
  if va then table.insert(A, 1, 1) end
  if vb then Bs[2] = 1 end
  if A[#A] ~= Bs[#Bs - 1] then return nil end
  local ba, bb = {}, {}
  for i = 1, #A - 2 do ba[i] = A[i] end
  for i = 1, #Bs - 2 do bb[i] = Bs[i] end
  local batch = broadcast(ba, bb)
  if not batch then return nil end
  local out = copy(batch)
  if not va then out[#out + 1] = A[#A - 1] end
  if not vb then out[#out + 1] = Bs[#Bs] end
  return out, A[#A]
end
M.matmul_shape = matmul_shape

function B:matmul(x)
  local rng = self.rng
  if #x.shape == 0 then return nil end
  local y = self:pick_value(function(v) return matmul_shape(x.shape, v.shape) ~= nil end)
  local left = true
  if not y or rng:chance(0.3) then
    local yl = self:pick_value(function(v) return matmul_shape(v.shape, x.shape) ~= nil end)
    if yl then y, left = yl, false end
  end
  if not y or rng:chance(0.4) then
    local k = x.shape[#x.shape]
    local t
    local u = rng:float()
    if u < 0.2 then t = {k}
    elseif u < 0.7 then t = {k, rng:int(1, 4)}
    else
      t = {}
      if #x.shape > 2 and rng:chance(0.5) then t[1] = rng:chance(0.5) and 1 or x.shape[#x.shape - 2] end
      t[#t + 1], t[#t + 2] = k, rng:int(0, 4)
    end
    local ny = self:new_input(t, rng:chance(0.6) and x.dtype or self:rand_dtype(), "unit")
    if ny then y, left = ny, true end
  end
  if not y then return nil end
  local a, b = x, y
  if not left then a, b = y, x end
  local shape, k = matmul_shape(a.shape, b.shape)
  if not shape then return nil end
  local t = promote(a.dtype, b.dtype)
  local m = k * mag(a) * mag(b)
  local lo, hi = -m, m
  if t == "bool" then lo, hi = 0, 1 end
  local lua = rng:chance(0.15) and #a.shape <= 2 and #b.shape <= 2 and "hl.dot(" .. a.name .. ", " .. b.name .. ")"
              or "hl.matmul(" .. a.name .. ", " .. b.name .. ")"
  local np
  if FLOAT[t] then
    -- halua accumulates in float32 (float64 for float64); the reference in float64
    local A, Bn = f64(cast(a.name, a.dtype, t)), f64(cast(b.name, b.dtype, t))
    np = P(wrap("np.matmul(" .. A .. ", " .. Bn .. ")", t), t, 1,
           string.format("%s * np.matmul(np.abs(%s), np.abs(%s))", py_num(2 * math.max(k, 1) * eps_acc(t)), A, Bn))
  else
    np = wrap("np.matmul(" .. cast(a.name, a.dtype, t) .. ", " .. cast(b.name, b.dtype, t) .. ")", t)
  end
  return self:emit(t, shape, lo, hi, a.nan or b.nan, lua, np)
end

---------------------------------------------------------------- programs

local KINDS = {{24, "unary"}, {30, "binary"}, {6, "where"}, {3, "clip"}, {14, "reduction"}, {4, "scan"}, {20, "shape_op"},
               {6, "matmul"}, {3, "update"}, {3, "nn"}}

-- generate(seed [, opts]): opts.wild (NaN/inf inputs, no guards; default: 1 program in 20),
-- opts.max_ops (12), opts.max_inputs (3), opts.max_rank (of inputs, 4), opts.dtypes ({{weight,
-- dtype}, ...}: the dtypes drawn for inputs and conversions; default all nine)
function M.generate(seed, opts)
  opts = opts or {}
  local rng = M.rng(seed)
  local o = {}
  for k, v in pairs(opts) do o[k] = v end
  local wild = rng:chance(0.05)
  local forced = o.wild
  if o.wild == nil then o.wild = wild end
  local b = builder(rng, o)
  local first = b:new_input(b:rand_shape(), b:rand_dtype())
  if rng:chance(0.35) then b:new_input(b:bcast_partner(first.shape), rng:chance(0.5) and first.dtype or b:rand_dtype()) end
  local nops = rng:int(1, o.max_ops or 12)
  local tries = 0
  while b.nv < nops and tries < nops * 20 do
    tries = tries + 1
    local kind = rng:weighted(KINDS)
    local x = b:pick_value()
    local ninputs, nvals = #b.inputs, #b.vals
    local ok = x and b[kind](b, x)
    if not ok then
      -- an op that was not emitted takes back the inputs it made
      for i = #b.inputs, ninputs + 1, -1 do b.inputs[i] = nil end
      for i = #b.vals, nvals + 1, -1 do b.vals[i] = nil end
    end
  end
  local out = b.vals[#b.vals]
  local params = {}
  for i, inp in ipairs(b.inputs) do params[i] = inp.name end
  local body = {}
  for i, l in ipairs(b.lua) do body[i] = "  " .. l end
  local prog = {
    seed = seed, wild = o.wild, forced_wild = forced, inputs = b.inputs, nops = b.nv, dtype = out.dtype, shape = out.shape,
    params = table.concat(params, ", "),
    body = table.concat(body, "\n"),
    out = out.name,
  }
  prog.lua = "return function(" .. prog.params .. ")\n" .. prog.body .. (#body > 0 and "\n" or "") .. "  return " .. out.name .. "\nend"
  local terms = {}
  for i, t in ipairs(b.np) do terms[i] = t end
  terms[#terms + 1] = out.name
  prog.np_body = "(" .. table.concat(terms, ", ") .. (#terms == 1 and ",)" or ")") .. "[-1]"
  prog.np = "mc(lambda P: " .. prog.np_body .. ", '" .. out.dtype .. "'" .. (o.wild and ", nonfinite=True" or "") .. ")"
  return prog
end

---------------------------------------------------------------- running and reproducing

-- the program as a Lua function of its inputs
function M.compile(prog, hl)
  local chunk = assert(loadstring(prog.lua, "=program " .. prog.seed))
  setfenv(chunk, setmetatable({hl = hl}, {__index = _G}))
  return chunk()
end

-- the input arrays
function M.arrays(prog, hl)
  local out = {}
  for i, inp in ipairs(prog.inputs) do
    if size(inp.shape) == 0 then out[i] = hl.zeros(inp.shape, inp.dtype)
    else out[i] = hl.reshape(hl.array(inp.values, inp.dtype), inp.shape) end
  end
  return out
end

local function lua_values(inp)
  local t = {}
  for i, v in ipairs(inp.values) do t[i] = type(v) == "boolean" and tostring(v) or lua_num(v) end
  return "{" .. table.concat(t, ", ") .. "}"
end

-- a standalone Lua script: the inputs, the program, its eager and jitted results
function M.lua_repro(prog)
  local l = {"local hl = require \"halua\""}
  for _, inp in ipairs(prog.inputs) do
    if size(inp.shape) == 0 then
      l[#l + 1] = string.format("local %s = hl.zeros(%s, %q)", inp.name, lua_table(inp.shape), inp.dtype)
    else
      l[#l + 1] = string.format("local %s = hl.reshape(hl.array(%s, %q), %s)", inp.name, lua_values(inp), inp.dtype, lua_table(inp.shape))
    end
  end
  l[#l + 1] = "local f = (function()\n" .. prog.lua:gsub("\n", "\n  ") .. "\nend)()"
  l[#l + 1] = "print(f(" .. prog.params .. "))"
  l[#l + 1] = "print(hl.jit(f)(" .. prog.params .. "))"
  return table.concat(l, "\n")
end

-- a standalone Python script: the inputs and the NumPy form through numpy_eval.py's helpers
function M.np_repro(prog)
  local l = {"import sys; sys.path.insert(0, 'tests/lua/support')", "from numpy_eval import *"}
  for _, inp in ipairs(prog.inputs) do
    local t = {}
    for i, v in ipairs(inp.values) do t[i] = type(v) == "boolean" and (v and "True" or "False") or py_num(v) end
    local npt = inp.dtype == "bfloat16" and "np.float32" or NPT[inp.dtype]
    l[#l + 1] = string.format("%s = np.array([%s], dtype=%s).reshape(%s)", inp.name, table.concat(t, ", "), npt, pylist(inp.shape))
  end
  l[#l + 1] = "r = " .. prog.np
  l[#l + 1] = "print(r.dtype, r.values, r.spread)"
  return table.concat(l, "\n")
end

return M
