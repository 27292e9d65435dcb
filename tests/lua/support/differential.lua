-- The differential suite's machinery, shared by differential_spec.lua and
-- differential_more_spec.lua: halua's dtypes and their NumPy names, seeded random shapes and
-- values (NaN, inf and -0.0 mixed into floats), NumPy expression helpers, and group(), which
-- turns a list of cases into eager and jitted tests against one python3 process's answers.
-- The randomness is math.random's: each spec seeds it before building its cases.
local hl = require "halua"
local np = require "support.numpy"
local M = {}

local DTYPES = {"float32", "float64", "float16", "bfloat16", "int8", "int32", "int64", "uint8", "bool"}
local INTS = {"int8", "int32", "int64", "uint8"}
local FLOAT = {float32 = true, float64 = true, float16 = true, bfloat16 = true}
local EPS = {float32 = 2 ^ -23, float64 = 2 ^ -52, float16 = 2 ^ -10, bfloat16 = 2 ^ -7}
-- the NumPy dtype holding each halua dtype's values (bfloat16's are float32 there)
local NPT = {float32 = "np.float32", float64 = "np.float64", float16 = "np.float16", bfloat16 = "np.float32",
             int8 = "np.int8", int32 = "np.int32", int64 = "np.int64", uint8 = "np.uint8", bool = "np.bool_"}

-- ---------------------------------------------------------------- random inputs

local function rint(a, b) return math.random(a, b) end
local function pick(t) return t[math.random(#t)] end
-- a random index for an axis of extent n, 1-based or negative
local function rand_index(n) return math.random() < 0.5 and rint(1, n) or -rint(1, n) end
local function size(shape) local n = 1 for _, e in ipairs(shape) do n = n * e end return n end
local function sname(s) return "[" .. table.concat(s, ",") .. "]" end
local function copy(t) local c = {} for i, v in ipairs(t) do c[i] = v end return c end

-- rank 0 to maxrank (default 5), extents 0 (rarely), 1 (often: broadcasting) or 2..4, at most 96 elements
local function rand_shape(maxrank, minrank)
  local r = rint(minrank or 0, maxrank or 5)
  local s = {}
  for i = 1, r do
    local u = math.random()
    s[i] = u < 0.07 and 0 or u < 0.3 and 1 or rint(2, 4)
  end
  while size(s) > 96 do
    local big = 1
    for i = 2, r do if s[i] > s[big] then big = i end end
    s[big] = s[big] - 1
  end
  return s
end

local SPECIALS = {0 / 0, 1 / 0, -1 / 0, -0.0, 0.0}
local RANGE = {int8 = {-128, 127}, uint8 = {0, 255}, int32 = {-1000, 1000}, int64 = {-100000, 100000}}

-- one random value of dtype. kind: nil (anything, specials included), "finite", "unit" (magnitude
-- 0.6..1.6 for products), "small" (integers -3..3), {lo, hi} (integers or floats in the range)
local function value(dtype, kind)
  if dtype == "bool" then return math.random() < 0.5 end
  local float = FLOAT[dtype]
  if type(kind) == "table" then
    local v = kind[1] + (kind[2] - kind[1]) * math.random()
    return float and v or math.floor(v + 0.5)
  end
  if kind == "small" then return dtype == "uint8" and rint(0, 3) or rint(-3, 3) end
  if not float then
    if math.random() < 0.08 then return 0 end
    local r = RANGE[dtype]
    if math.random() < 0.05 then return pick(r) end
    return rint(r[1], r[2])
  end
  if kind == nil and math.random() < 0.12 then return pick(SPECIALS) end
  if kind == "unit" then return (math.random() < 0.5 and -1 or 1) * (0.6 + math.random()) end
  local u = math.random()
  if u < 0.15 then return rint(-4, 4) + 0.5 end        -- ties for round, floor_divide, mod
  if u < 0.25 then return rint(-4, 4) end
  return -4 + 8 * math.random()
end

local function arr(shape, dtype, kind)
  local n = size(shape)
  if n == 0 then return hl.zeros(shape, dtype) end
  local v = {}
  for i = 1, n do v[i] = value(dtype, kind) end
  return hl.reshape(hl.array(v, dtype), shape)
end

-- a shape that broadcasts with s: a random suffix of s, some axes made 1; sometimes the longer one
local function bcast_partner(s)
  local k = rint(0, #s)
  local t = {}
  for i = #s - k + 1, #s do t[#t + 1] = math.random() < 0.35 and 1 or s[i] end
  return t
end

-- ---------------------------------------------------------------- NumPy expressions

-- input `name` (of halua dtype `from`) as NumPy values of halua dtype `to`
local function cast(name, from, to)
  if from == to or (from == "bfloat16" and to == "float32") then return name end
  if to == "bfloat16" then return "bf16(" .. name .. ").values" end
  return name .. ".astype(" .. NPT[to] .. ")"
end
-- a NumPy result as halua dtype `dt`
local function wrap(expr, dt)
  if dt == "bfloat16" then return "bf16(" .. expr .. ")" end
  return "np.asarray(" .. expr .. ").astype(" .. NPT[dt] .. ")"
end
-- a 1-based (negatives from the end) halua axis as NumPy's
local function npax(a) return a > 0 and a - 1 or a end
local function npaxes(axes)
  if axes == nil then return "None" end
  if type(axes) == "number" then return tostring(npax(axes)) end
  local t = {}
  for i, a in ipairs(axes) do t[i] = npax(a) end
  return "(" .. table.concat(t, ",") .. (#t == 1 and ",)" or ")")
end
local function pylist(t) return "(" .. table.concat(t, ",") .. (#t == 1 and ",)" or ")") end

local function max_abs(x)
  if x.size == 0 or x.dtype == "bool" then return 1 end
  local m = 0
  for _, v in ipairs(hl.reshape(x, {x.size}):astype("float64"):totable()) do
    if v == v and math.abs(v) ~= math.huge and math.abs(v) > m then m = math.abs(v) end
  end
  return m
end

-- the dtype two arrays promote to (README "dtypes")
local promote = require "support.promotion"

-- ---------------------------------------------------------------- the harness

local function err_text(e) return tostring(e) end

-- got: a function giving halua's value; checks it against the case (a NumPy result, a NumPy
-- error that halua must share, or a refusal halua must give)
local function check(c, got)
  if c.refuse then
    local ok, e = pcall(got)
    assert(not ok, "expected halua to refuse: " .. c.refuse)
    assert(err_text(e):find(c.refuse, 1, true), "error '" .. err_text(e) .. "' lacks '" .. c.refuse .. "'")
    assert(err_text(e):match("^halua: "), "not a halua error: " .. err_text(e))
    return
  end
  local w = c.want()
  if w.error then
    local ok, e = pcall(got)
    assert(not ok, "NumPy raised (" .. w.error .. ") but halua gave a value")
    assert(err_text(e):match("^halua: "), "NumPy raised (" .. w.error .. "); halua's error is not a halua error: " .. err_text(e))
    return
  end
  local v = got()
  np.assert_close(v, w, c.opts)
end

local function run_bundle(b)
  if b.ran then return end
  b.ran = true
  local fns, args = {}, {}
  for i, c in ipairs(b.cases) do fns[i], args[i] = c.f, c.inputs end
  local jf = hl.jit(function(all)
    local out = {}
    for i, f in ipairs(fns) do out[i] = f(unpack(all[i])) end
    return out
  end)
  local ok, res = pcall(jf, args)
  if ok then b.results = res else b.err = err_text(res) end
end

-- group(title, function(add) ... end): add{name=, f=, inputs=, expr= | refuse=, opts=, jit=key}
-- Cases with the same jit key share one jitted function; jit = false (or nil) runs eagerly only.
-- Cases NumPy is expected to refuse (c.fails = true) or halua must refuse run alone under jit
-- (they fail while tracing, before any compile).
local function group(title, build)
  -- busted's describe/it/setup live in the calling spec's environment
  local env = getfenv(2)
  local describe, it, setup = env.describe, env.it, env.setup
  describe(title, function()
    local batch, cases, bundles = np.batch(), {}, {}
    local function add(c)
      assert(c.name and c.f and c.inputs, "case needs name, f, inputs")
      if not c.refuse then c.want = batch:add(c.expr, c.inputs) end
      cases[#cases + 1] = c
      if c.jit and not c.refuse and not c.fails then
        -- a jitted program takes at most 64 arrays in and 64 out: a full bundle starts another
        local b = bundles[c.jit]
        if b and (b.nin + #c.inputs > 60 or #b.cases >= 60) then b = nil end
        if not b then b = {cases = {}, nin = 0}; bundles[c.jit] = b end
        b.cases[#b.cases + 1] = c
        b.nin = b.nin + #c.inputs
        c.bundle, c.slot = b, #b.cases
      end
    end
    build(add)
    setup(function() batch:run(); if os.getenv("HALUA_DIFF_TIMES") then io.stderr:write(string.format("%6.1f s  %s (%d cases)\n", os.clock(), title, #cases)) end end)
    for _, c in ipairs(cases) do
      it(c.name, function() check(c, function() return c.f(unpack(c.inputs)) end) end)
    end
    for _, c in ipairs(cases) do
      local function alone() return hl.jit(c.f)(unpack(c.inputs)) end   -- the case in a jitted function of its own
      if c.bundle then
        it(c.name .. " [jit]", function()
          local b = c.bundle
          run_bundle(b)
          if b.err then
            check(c, alone)   -- (to name the failing case)
            error("passes alone under jit, but its group's jitted function failed: " .. b.err)
          end
          local ok, e = pcall(check, c, function() return b.results[c.slot] end)
          if not ok then
            -- a wrong value only in the group points at how programs are combined, not the op
            local alone_ok = pcall(check, c, alone)
            error(err_text(e) .. (alone_ok and " (alone under jit it passes: the group's program is wrong)" or " (alone under jit too)"), 0)
          end
        end)
      elseif c.jit then
        it(c.name .. " [jit]", function() check(c, alone) end)
      end
    end
  end)
end


-- a random axis argument for rank r: nil, one axis (either sign) or a table of them
local function rand_axes(r, single)
  if r == 0 or math.random() < 0.2 then return nil end
  local function one(a) return math.random() < 0.5 and a or a - r - 1 end
  if single or math.random() < 0.5 then return one(rint(1, r)) end
  local t, used = {}, {}
  for _ = 1, rint(1, r) do
    local a = rint(1, r)
    if not used[a] then used[a] = true; t[#t + 1] = one(a) end
  end
  return t
end
local function reduced_count(shape, axes)
  if axes == nil then return size(shape) end
  if type(axes) == "number" then axes = {axes} end
  local n = 1
  for _, a in ipairs(axes) do n = n * shape[a > 0 and a or #shape + a + 1] end
  return n
end
local function axes_name(axes)
  if axes == nil then return "all" end
  if type(axes) == "number" then return tostring(axes) end
  return "{" .. table.concat(axes, ",") .. "}"
end

for k, v in pairs {DTYPES = DTYPES, INTS = INTS, FLOAT = FLOAT, EPS = EPS, NPT = NPT, rint = rint, pick = pick, rand_index = rand_index, size = size, sname = sname, copy = copy, rand_shape = rand_shape, SPECIALS = SPECIALS, RANGE = RANGE, value = value, arr = arr, bcast_partner = bcast_partner, cast = cast, wrap = wrap, npax = npax, npaxes = npaxes, pylist = pylist, max_abs = max_abs, promote = promote, group = group, rand_axes = rand_axes, reduced_count = reduced_count, axes_name = axes_name} do M[k] = v end
return M
