-- Large shapes under hl.jit against the same functions run eagerly. Under jit shapes are static and
-- arrays of >= 32K elements get the backend's big-array schedules (parallel loops fused over
-- several axes, rfactor of reductions, vector splits whose tails shift inwards, matmul tiles),
-- which the small shapes of differential_spec never reach; eager kernels are compiled
-- shape-generic and scheduled differently. So eager is the oracle here (NumPy checks a sample).
-- Shapes: rank 1 to 5, 40K to 400K elements, odd extents, extents of 1, extents that are not
-- multiples of the vector width; some inputs are transposed or strided views. Seeded: the same
-- cases every run. Each op group is traced into ONE jitted function (a table of inputs in, a
-- table of results out), so a group costs one compile; a failing group is re-run case by case.
-- Compiling large bundles dominates the time (a 400-op bundle takes ~30 s on 2 cores), so by
-- default each group draws a bounded sample (~90 s in all); HALUA_LARGE_JIT=full runs every
-- dtype, rank and axis subset (several minutes).
local hl = require "halua"
local np = require "support.numpy"

-- HALUA_LARGE_JIT_SEED=n draws other cases (to hunt; the default seed is what CI runs)
local SEED = tonumber(os.getenv("HALUA_LARGE_JIT_SEED") or "") or 20261126
math.randomseed(SEED)
local KEY = hl.random.key(SEED == 20261126 and 1126 or SEED)
local FULL = os.getenv("HALUA_LARGE_JIT") == "full"
-- the full list, or (by default) the entries at the given positions
local function some(t, keep)
  if FULL then return t end
  local out = {}
  for _, i in ipairs(keep) do out[#out + 1] = t[i] end
  return out
end
local counter = 0

local function rint(a, b) return math.random(a, b) end
local function pick(t) return t[math.random(#t)] end
local function size(s) local n = 1 for _, e in ipairs(s) do n = n * e end return n end
local function sname(s) return "[" .. table.concat(s, ",") .. "]" end
local FLOAT = {float32 = true, float64 = true, float16 = true, bfloat16 = true}
local EPS = {float32 = 2 ^ -23, float64 = 2 ^ -52, float16 = 2 ^ -10, bfloat16 = 2 ^ -7}
-- the smallest normal number: products that underflow may flush subnormals to zero in one
-- schedule and not in the other
local TINY = {float32 = 2 ^ -126, float64 = 2 ^ -1022}

-- a shape of rank r with lo..hi elements: a few small axes (1, odd, not multiples of 8) and one
-- large one, at a random position so the innermost axis is sometimes short
local function big_shape(r, lo, hi)
  lo, hi = lo or 40000, hi or 400000
  local target = rint(lo, hi)
  local s, prod = {}, 1
  for i = 1, r - 1 do
    local u = math.random()
    s[i] = u < 0.2 and 1 or u < 0.6 and rint(2, 13) or rint(14, 61)
    if prod * s[i] * 2 > target then s[i] = 1 end
    prod = prod * s[i]
  end
  local big = math.floor(target / prod)
  if big % 8 == 0 then big = big + 1 end
  table.insert(s, rint(1, r), big)
  return s
end

local function rand_rank() return rint(1, 5) end

-- random values: floats in [-4, 4], ints in [-1000, 1000] (uint8 0..255), bool half true.
-- kind "unit": magnitudes 0.9..1.1 (products), "pos": 0.1..4
local function input(shape, dtype, kind)
  counter = counter + 1
  local k = hl.random.fold_in(KEY, counter)
  if dtype == "bool" then return hl.random.bernoulli(k, 0.5, shape) end
  if not FLOAT[dtype] then
    local lo, hi = -1000, 1001
    if dtype == "uint8" then lo, hi = 0, 256 end
    if kind == "small" then lo, hi = -3, 4 end
    return hl.random.randint(k, shape, lo, hi, "int32"):astype(dtype)
  end
  local base = dtype == "float64" and "float64" or "float32"
  local x
  if kind == "unit" then
    x = hl.random.uniform(k, shape, base, 0.9, 1.1) * hl.where(hl.random.bernoulli(hl.random.fold_in(k, 1), 0.5, shape), 1, -1):astype(base)
  elseif kind == "pos" then x = hl.random.uniform(k, shape, base, 0.1, 4)
  else x = hl.random.uniform(k, shape, base, -4, 4) end
  return x:astype(dtype)
end

-- the same values, sometimes handed over as a transposed or a strided (every other element) view
local function view_input(shape, dtype, kind)
  local u = math.random()
  if u < 0.25 and #shape >= 2 then
    local perm, rev = {}, {}
    for i = 1, #shape do perm[i] = i end
    for i = #perm, 2, -1 do local j = rint(1, i); perm[i], perm[j] = perm[j], perm[i] end
    for i, p in ipairs(perm) do rev[p] = i end
    local src = {}
    for i, p in ipairs(perm) do src[i] = shape[p] end
    return hl.transpose(input(src, dtype, kind), rev), "transposed"
  elseif u < 0.4 then
    local src = {}
    for i, e in ipairs(shape) do src[i] = e end
    local ax = rint(1, #shape)
    src[ax] = 2 * shape[ax]
    local idx = {}
    for i = 1, #shape do idx[i] = {} end
    idx[ax] = {1, 2 * shape[ax] - 1, 2}
    return input(src, dtype, kind)[idx], "strided"
  end
  return input(shape, dtype, kind), nil
end

-- ---------------------------------------------------------------- comparison (eagerly)

-- got (jit) against want (eager): dtype, shape, then values: exact unless tol = {rtol, atol};
-- NaN matches NaN, inf matches the same inf
local function compare(got, want, tol)
  assert(hl.core.is_array(got), "jit gave " .. tostring(got))
  assert(got.dtype == want.dtype, "dtype " .. got.dtype .. ", eager " .. want.dtype)
  assert(sname(got.shape) == sname(want.shape), "shape " .. sname(got.shape) .. ", eager " .. sname(want.shape))
  if want.size == 0 then return end
  local bad
  if FLOAT[want.dtype] then
    local g, w = got:astype("float64"), want:astype("float64")
    local same = hl.logical_or(hl.eq(g, w), hl.logical_and(hl.isnan(g), hl.isnan(w)))
    if tol then
      same = hl.logical_or(same, hl.le(hl.abs(g - w), tol[2] + tol[1] * hl.abs(w)))
    end
    bad = hl.logical_not(same)
  else
    bad = hl.ne(got, want)
  end
  local flat = hl.reshape(bad, {want.size})
  local nbad = hl.sum(flat:astype("int32")):item()
  if nbad > 0 then
    local i = hl.argmax(flat:astype("int32")):item()
    local gv = hl.reshape(got, {want.size})[i]:astype("float64"):item()
    local wv = hl.reshape(want, {want.size})[i]:astype("float64"):item()
    error(string.format("%d of %d elements differ; first at flat index %d: jit %.17g, eager %.17g%s",
      nbad, want.size, i, gv, wv, tol and string.format(" (rtol %g, atol %g)", tol[1], tol[2]) or " (exact)"), 0)
  end
end

local function max_abs(x)
  if x.dtype == "bool" or x.size == 0 then return 1 end
  local a = hl.abs(x:astype("float64"))
  return hl.max(hl.where(hl.isfinite(a), a, 0)):item()
end

-- tolerance for a float result accumulating `terms` terms of magnitude up to `mag`
local function acc_tol(dtype, terms, mag)
  local eps = EPS[dtype] or 0
  return {8 * eps, 4 * eps * terms * mag}
end

-- ---------------------------------------------------------------- the harness

-- group(title, build): build(add) calls add{name=, f=, inputs=, tol=, np=}: tol nil compares
-- exactly; np = a NumPy expression over a, b, ... checks the eager result too (keep those inputs
-- small-ish: they go to python3 as JSON)
local function group(title, build)
  describe(title, function()
    local cases, batch = {}, np.batch()
    local function add(c)
      assert(c.name and c.f and c.inputs, "case needs name, f, inputs")
      if c.np then c.want = batch:add(c.np, c.inputs) end
      cases[#cases + 1] = c
    end
    build(add)
    -- bundles of at most 60 inputs (a jitted program takes at most 64 arrays in and out)
    local bundles, cur = {}, nil
    for _, c in ipairs(cases) do
      -- (one result per case: inputs and results together stay under 64)
      if not cur or cur.nin + #c.inputs + #cur.cases + 1 > 60 then
        cur = {cases = {}, nin = 0}; bundles[#bundles + 1] = cur
      end
      cur.cases[#cur.cases + 1] = c
      cur.nin = cur.nin + #c.inputs
      c.bundle, c.slot = cur, #cur.cases
    end
    local function run(b)
      if b.ran then return end
      b.ran = true
      local fns, args = {}, {}
      for i, c in ipairs(b.cases) do fns[i], args[i] = c.f, c.inputs end
      local ok, res = pcall(hl.jit(function(all)
        local out = {}
        for i, f in ipairs(fns) do out[i] = f(unpack(all[i])) end
        return out
      end), args)
      if ok then b.results = res else b.err = tostring(res) end
    end
    setup(function()
      if #batch.cases > 0 then batch:run() end
      if os.getenv("HALUA_DIFF_TIMES") then io.stderr:write(string.format("%6.1f s  %s (%d cases)\n", os.clock(), title, #cases)) end
    end)
    for _, c in ipairs(cases) do
      it(c.name, function()
        local want = c.f(unpack(c.inputs))
        if c.want then np.assert_close(want, c.want(), c.np_opts or {dtype = false, rtol = c.tol and c.tol[1], atol = c.tol and c.tol[2]}) end
        local b = c.bundle
        run(b)
        if b.err then
          compare(hl.jit(c.f)(unpack(c.inputs)), want, c.tol)
          error("passes alone under jit, but its group's jitted function failed: " .. b.err)
        end
        compare(b.results[c.slot], want, c.tol)
      end)
    end
  end)
end

local function label(op, dt, x, how) return string.format("%s %s%s%s", op, dt, sname(x.shape), how and (" " .. how) or "") end

-- ---------------------------------------------------------------- elementwise

local UNARY = {"neg", "abs", "sign", "square", "floor", "round", "exp", "log", "sqrt", "sin", "tanh", "erf",
               "isnan", "logical_not"}
local BINARY = {"add", "sub", "mul", "div", "maximum", "minimum", "mod", "floor_divide", "lt", "eq", "pow", "atan2"}

group("elementwise ops with broadcasting at large shapes: jit against eager", function(add)
  for _, dt in ipairs {"float32", "float64", "int32", "float16", "bfloat16", "uint8", "bool"} do
    local ops = (dt == "bool") and {"logical_not", "abs"} or UNARY
    for k = 1, 3 do
      local op = pick(ops)
      local x, how = view_input(big_shape(rand_rank()), dt)
      -- transcendental functions may differ by an ulp between vectorized and scalar code
      local tol = FLOAT[dt] and {4 * EPS[dt], 1e-30} or (dt ~= "bool" and op:match("^[elst]") and {1e-6, 1e-30}) or nil
      add {name = label(op, dt, x, how), f = hl[op], inputs = {x}, tol = tol}
    end
    for k = 1, (dt == "bool" and 1 or 3) do
      local op = dt == "bool" and "logical_xor" or pick(BINARY)
      local sa = big_shape(rand_rank())
      -- the partner: a suffix of sa with some axes 1 (broadcasting), or sa itself
      local sb = {}
      local from = rint(1, #sa)
      for i = from, #sa do sb[#sb + 1] = math.random() < 0.4 and 1 or sa[i] end
      if math.random() < 0.5 then sa, sb = sb, sa end
      local x, how = view_input(sa, dt, op == "pow" and "unit" or nil)
      local y = input(sb, dt, (op == "pow" and "small") or ((op == "mod" or op == "floor_divide" or op == "div") and not FLOAT[dt] and "small") or nil)
      if (op == "mod" or op == "floor_divide") and not FLOAT[dt] then y = hl.where(hl.eq(y, 0), 1, y):astype(dt) end
      local tol = FLOAT[dt] and {4 * EPS[dt], 1e-30} or ((op == "div" or op == "pow" or op == "atan2") and {1e-6, 1e-30}) or nil
      add {name = label(op, dt, x, how) .. " " .. sname(sb), f = hl[op], inputs = {x, y}, tol = tol}
    end
  end
  -- where with three broadcasting operands, clip, astype
  for _, dt in ipairs {"float32", "int32", "float64"} do
    local s = big_shape(rand_rank())
    local c = input({s[#s]}, "bool")
    local x, how = view_input(s, dt)
    local y = input({1, s[#s]}, dt)
    add {name = label("where", dt, x, how), f = function(c_, a, b) return hl.where(c_, a, b) end, inputs = {c, x, y}}
    add {name = label("clip", dt, x, how), f = function(a) return hl.clip(a, -2, 3) end, inputs = {x}}
  end
  local x = input(big_shape(3), "float32")
  add {name = label("astype int32, float16, uint8", "float32", x), inputs = {x},
       f = function(a) return hl.concatenate({a:astype("int32"):astype("float32"), a:astype("float16"):astype("float32"),
                                               hl.abs(a):astype("uint8"):astype("float32")}, 1) end}
  -- a NumPy sample
  local a, b = input({331, 157}, "float32"), input({157}, "float32")
  add {name = "sub then exp float32[331,157] [157] (NumPy too)", f = function(p, q) return hl.exp(p - q) end,
       inputs = {a, b}, tol = {8 * EPS.float32, 1e-30}, np = "np.exp(a - b)"}
end)

-- ---------------------------------------------------------------- reductions

-- every subset of axes of a rank-r array, as a list of 1-based axes (nil: all)
local function subsets(r)
  local out = {}
  for m = 1, 2 ^ r - 1 do
    local s = {}
    for i = 1, r do if math.floor(m / 2 ^ (i - 1)) % 2 == 1 then s[#s + 1] = i end end
    out[#out + 1] = s
  end
  return out
end

local REDUCE = {"sum", "prod", "mean", "max", "min", "logsumexp", "var"}

group("reductions over every axis subset at large shapes: jit against eager", function(add)
  for _, dt in ipairs(some({"float32", "float64", "int32"}, {1, 2, 3})) do
    for _, r in ipairs(FULL and {1, 2, 3, 4, 5} or ({float32 = {4}, float64 = {1, 3}, int32 = {2}})[dt]) do
      local x, how = view_input(big_shape(r), dt, nil)
      local mag = max_abs(x)
      for _, axes in ipairs(subsets(r)) do
        local op = pick(REDUCE)
        if dt == "int32" and (op == "logsumexp" or op == "var" or op == "mean") then op = pick {"sum", "max", "min"} end
        local xin = x
        if op == "prod" then xin = input(x.shape, dt, FLOAT[dt] and "unit" or "small") end
        if dt == "int32" and op == "prod" then op = "max" end   -- int products overflow
        local keep = math.random() < 0.3
        local terms = 1
        for _, a in ipairs(axes) do terms = terms * x.shape[a] end
        local ax = (#axes == r and math.random() < 0.5) and nil or (#axes == 1 and math.random() < 0.5 and axes[1] - r - 1) or axes
        local tol = FLOAT[dt] and (op == "var" and acc_tol(dt, terms, 16 * mag * mag) or op == "prod" and {terms * 4 * EPS[dt], TINY[dt]} or acc_tol(dt, terms, math.max(mag, 1))) or nil
        add {name = string.format("%s %s%s axes %s%s%s", op, dt, sname(x.shape), ax == nil and "all" or type(ax) == "number" and tostring(ax) or sname(ax),
                                  keep and " keepdims" or "", how and (" " .. how) or ""),
             f = function(a) return hl[op](a, ax, keep) end, inputs = {xin}, tol = tol}
      end
      -- argmax/argmin over one axis (ties are rare with random floats; ints tie often: first wins)
      for _, op in ipairs {"argmax", "argmin"} do
        local a = rint(1, r)
        add {name = string.format("%s %s%s axis %d%s", op, dt, sname(x.shape), a, how and (" " .. how) or ""),
             f = function(v) return hl[op](v, a) end, inputs = {x}}
      end
    end
  end
  -- every full float reduction of >= 32K elements once failed to compile under jit ("Stage::
  -- unscheduled called on an update definition with a schedule")
  local full = input({52, 265, 13}, "float32")
  add {name = "sum, max, min, mean, prod, logsumexp of all of float32[52,265,13]", inputs = {full},
       f = function(v) return hl.stack({hl.sum(v), hl.max(v), hl.min(v), hl.mean(v), hl.prod(v * 0 + 1), hl.logsumexp(v)}) end,
       tol = acc_tol("float32", full.size, 4)}
  local a = input({7, 53, 129}, "float64")
  add {name = "sum float64[7,53,129] axes {1,3} (NumPy too)", f = function(v) return hl.sum(v, {1, 3}) end, inputs = {a},
       tol = {1e-12, 1e-10}, np = "np.sum(a, axis=(0, 2))"}
  add {name = "argmax float64[7,53,129] axis 2 (NumPy too)", f = function(v) return hl.argmax(v, 2) end, inputs = {a},
       np = "np.argmax(a, axis=1) + 1"}
end)

-- ---------------------------------------------------------------- scans and softmax

group("cumsum, cumprod, softmax, log_softmax at large shapes: jit against eager", function(add)
  for _, dt in ipairs {"float32", "float64", "int32"} do
    for k = 1, FULL and 3 or 1 do
      local r = rand_rank()
      local x, how = view_input(big_shape(r), dt)
      local a = rint(1, r)
      local n = x.shape[a]
      add {name = label("cumsum axis " .. a, dt, x, how), f = function(v) return hl.cumsum(v, a) end, inputs = {x},
           tol = FLOAT[dt] and acc_tol(dt, n, 4) or nil}
      local u = input(x.shape, dt, FLOAT[dt] and "unit" or "small")
      if dt == "int32" then u = hl.clip(u, -1, 1):astype("int32") end
      add {name = label("cumprod axis " .. a, dt, u), f = function(v) return hl.cumprod(v, a) end, inputs = {u},
           tol = FLOAT[dt] and {n * 4 * EPS[dt], TINY[dt]} or nil}
      if FLOAT[dt] then
        add {name = label("softmax axis " .. a, dt, x, how), f = function(v) return hl.nn.softmax(v, a) end, inputs = {x},
             tol = acc_tol(dt, n, 1)}
        add {name = label("log_softmax axis " .. a, dt, x, how), f = function(v) return hl.nn.log_softmax(v, a) end, inputs = {x},
             tol = acc_tol(dt, n, 8)}
      end
    end
  end
  local a = input({5, 9001}, "float64")
  add {name = "cumsum float64[5,9001] axis 2 (NumPy too)", f = function(v) return hl.cumsum(v, 2) end, inputs = {a},
       tol = {1e-11, 1e-9}, np = "np.cumsum(a, axis=1)"}
end)

-- ---------------------------------------------------------------- matmul

group("matmul with batch dims and transposed views at large shapes: jit against eager", function(add)
  for _, dt in ipairs {"float32", "float64", "int32"} do
    for _, k in ipairs(some({1, 2, 3, 4}, {({float32 = 2, float64 = 3, int32 = 4})[dt] or 1})) do
      local m, kk, n = rint(17, 301), rint(3, 197), rint(9, 283)
      local batch = ({{}, {rint(2, 5)}, {rint(2, 3), 1}, {1, rint(2, 4)}})[k]
      local sa, sb = {}, {}
      for i, e in ipairs(batch) do sa[i] = e; sb[i] = (k == 3 and i == 2) and rint(2, 3) or e end
      local ta, tb = math.random() < 0.5, math.random() < 0.5
      local ash = {unpack(sa)}; ash[#ash + 1] = ta and kk or m; ash[#ash + 1] = ta and m or kk
      local bsh = {unpack(sb)}; bsh[#bsh + 1] = tb and n or kk; bsh[#bsh + 1] = tb and kk or n
      local a = input(ash, dt, not FLOAT[dt] and "small" or nil)
      local b = input(bsh, dt, not FLOAT[dt] and "small" or nil)
      local function T(v) local p = {} for i = 1, v.ndim do p[i] = i end p[#p], p[#p - 1] = p[#p - 1], p[#p] return hl.transpose(v, p) end
      add {name = string.format("matmul %s %s%s x %s%s", dt, sname(ash), ta and "^T" or "", sname(bsh), tb and "^T" or ""),
           f = function(p, q) return hl.matmul(ta and T(p) or p, tb and T(q) or q) end, inputs = {a, b},
           tol = FLOAT[dt] and acc_tol(dt, kk, 16) or nil}
    end
    -- a matrix-vector product and a vector-matrix product
    local a, v = input({rint(300, 900), rint(100, 400)}, dt, "small"), nil
    v = input({a.shape[2]}, dt, "small")
    add {name = string.format("matmul %s %s x vector", dt, sname(a.shape)), f = hl.matmul, inputs = {a, v},
         tol = FLOAT[dt] and acc_tol(dt, a.shape[2], 9) or nil}
  end
  local a, b = input({3, 61, 47}, "float64"), input({47, 83}, "float64")
  add {name = "matmul float64[3,61,47] x [47,83] (NumPy too)", f = hl.matmul, inputs = {a, b}, tol = {1e-12, 1e-11},
       np = "np.matmul(a, b)"}
end)

-- ---------------------------------------------------------------- data movement

group("transpose, reshape, slice, flip, concatenate, pad, tile, repeat at large shapes: jit against eager", function(add)
  for _, dt in ipairs(some({"float32", "float64", "int32", "uint8", "bool", "float16"}, {1, 3, 5})) do
    local r = rint(2, 5)
    local x, how = view_input(big_shape(r), dt)
    local s = x.shape
    local perm = {}
    for i = 1, r do perm[i] = i end
    for i = r, 2, -1 do local j = rint(1, i); perm[i], perm[j] = perm[j], perm[i] end
    add {name = label("transpose " .. sname(perm), dt, x, how), f = function(v) return hl.transpose(v, perm) end, inputs = {x}}
    add {name = label("transpose then reshape", dt, x, how), inputs = {x},
         f = function(v) return hl.reshape(hl.transpose(v, perm), {-1, s[perm[r]]}) end}
    local idx = {}
    for i = 1, r do
      local e = s[i]
      idx[i] = e == 1 and {} or pick {{}, {2, e}, {1, e, 2}, {-e + 1, -1, 3}}
    end
    add {name = label("slice", dt, x, how), f = function(v) return v[idx] end, inputs = {x}}
    local fa = rint(1, r)
    add {name = label("flip " .. fa, dt, x, how), f = function(v) return hl.flip(v, fa) end, inputs = {x}}
    add {name = label("flip all", dt, x, how), f = function(v) return hl.flip(v) end, inputs = {x}}
    local ca = rint(1, r)
    local ys = {unpack(s)}; ys[ca] = rint(1, 5)
    local y = input(ys, dt)
    add {name = label("concatenate axis " .. ca, dt, x, how), f = function(p, q) return hl.concatenate({q, p, q}, ca) end,
         inputs = {x, y}}
    local w = {}
    for i = 1, r do w[i] = {rint(0, 2), rint(0, 3)} end
    local mode = dt == "bool" and "constant" or pick {"constant", "reflect", "wrap", "edge"}
    if mode == "reflect" then for i = 1, r do if s[i] == 1 then w[i] = {0, 0} end end end
    add {name = label("pad " .. mode, dt, x, how), f = function(v) return hl.pad(v, w, {mode = mode}) end, inputs = {x}}
    -- (tile of rank 5 is refused: "tile: at most 8 dimensions", a known limit)
    local small = input(big_shape(math.min(r, 4), 8000, 20000), dt)
    local reps = {}
    for i = 1, small.ndim do reps[i] = rint(1, 3) end
    add {name = label("tile " .. sname(reps), dt, small), f = function(v) return hl.tile(v, reps) end, inputs = {small}}
    local ra = rint(1, small.ndim)
    add {name = label("repeat 3 axis " .. ra, dt, small), f = function(v) return hl["repeat"](v, 3, ra) end, inputs = {small}}
  end
  local a = input({41, 1, 997}, "int32")
  add {name = "pad reflect then flip int32[41,1,997] (NumPy too)", inputs = {a},
       f = function(v) return hl.flip(hl.pad(v, {{2, 1}, {0, 0}, {3, 4}}, "reflect"), 3) end,
       np = "np.flip(np.pad(a, ((2, 1), (0, 0), (3, 4)), mode='reflect'), 2)"}
end)

-- ---------------------------------------------------------------- gathers and scatters

group("take, take_along_axis, scatter-add, sort, argsort at large shapes: jit against eager", function(add)
  for _, dt in ipairs {"float32", "float64", "int32"} do
    local r = rint(2, 4)
    local x, how = view_input(big_shape(r), dt)
    local s = x.shape
    local a = rint(1, r)
    local n = s[a]
    local idx = hl.random.randint(hl.random.fold_in(KEY, 9000 + r), {rint(100, 3000)}, 1, n + 1)
    add {name = label("take axis " .. a, dt, x, how), f = function(v, i) return hl.take(v, i, a) end, inputs = {x, idx}}
    local ish = {unpack(s)}; ish[a] = rint(1, 7)
    local ii = hl.random.randint(hl.random.fold_in(KEY, 9100 + r), ish, 1, n + 1)
    add {name = label("take_along_axis axis " .. a, dt, x, how), f = function(v, i) return hl.take_along_axis(v, i, a) end,
         inputs = {x, ii}}
    -- scatter-add along axis 1 with repeated indices
    local vs = {unpack(s)}; vs[1] = idx.shape[1] % 50 + 1
    local si = hl.random.randint(hl.random.fold_in(KEY, 9200 + r), {vs[1]}, 1, s[1] + 1)
    local vals = input(vs, dt, not FLOAT[dt] and "small" or nil)
    add {name = label("at(idx):add", dt, x, how), inputs = {x, si, vals},
         f = function(v, i, u) local sel = {i} for k = 2, r do sel[k] = {} end return v:at(sel):add(u) end,
         tol = FLOAT[dt] and acc_tol(dt, vs[1], 8) or nil}
    local sa = rint(1, r)
    add {name = label("sort axis " .. sa, dt, x, how), f = function(v) return hl.sort(v, sa) end, inputs = {x}}
    -- argsort on distinct values (ties' order is the sort's own business)
    -- (i * p) mod n for a prime p not dividing n: distinct values in a scrambled order
    local n_all, p = size(s), 7919
    if n_all % p == 0 then p = 7927 end
    local d = hl.reshape(hl.mod(hl.arange(n_all, "int64") * p, n_all), s):astype(dt)
    add {name = label("argsort axis " .. sa, dt, d), f = function(v) return hl.argsort(v, sa) end, inputs = {d}}
  end
  local a = input({613, 71}, "float32")
  local i = hl.array({5, 1, 613, 612, 5, 300}, "int32")
  add {name = "take float32[613,71] rows (NumPy too)", f = function(v, j) return hl.take(v, j, 1) end, inputs = {a, i},
       np = "np.take(a, b - 1, axis=0)"}
  local b = input({499, 97}, "float64")
  add {name = "sort float64[499,97] axis 1 (NumPy too)", f = function(v) return hl.sort(v, 1) end, inputs = {b}, np = "np.sort(a, axis=0)"}
end)

-- ---------------------------------------------------------------- conv2d and fused chains

group("conv2d and fused chains at large shapes: jit against eager", function(add)
  for _, dt in ipairs {"float32", "float64"} do
    for _, k in ipairs(some({1, 2, 3}, {dt == "float32" and 2 or 3})) do
      local N, C, H, W, O = rint(1, 3), rint(1, 5), rint(30, 97), rint(30, 131), rint(1, 9)
      local kh, kw = rint(1, 5), rint(1, 5)
      local x, xw = input({N, C, H, W}, dt), input({O, C, kh, kw}, dt)
      local opts = ({{}, {padding = "same"}, {stride = 2, padding = 1}})[k]
      add {name = string.format("conv2d %s %s * %s %s", dt, sname(x.shape), sname(xw.shape), k == 1 and "valid" or k == 2 and "same" or "stride 2"),
           f = function(p, q) return hl.nn.conv2d(p, q, opts) end, inputs = {x, xw}, tol = acc_tol(dt, C * kh * kw, 16)}
    end
    -- chains: elementwise into a reduction, a reduction broadcast back, softmax into matmul
    local s = big_shape(3)
    local x, how = view_input(s, dt)
    add {name = label("sum(exp(x) * 2 - x, 3) / max(x)", dt, x, how), inputs = {x},
         f = function(v) return hl.sum(hl.exp(v) * 2 - v, 3) / hl.max(v) end, tol = acc_tol(dt, s[3], 120)}
    add {name = label("x - mean(x, 2, keepdims) then abs then max over 1", dt, x, how), inputs = {x},
         f = function(v) return hl.max(hl.abs(v - hl.mean(v, 2, true)), 1) end, tol = acc_tol(dt, s[2], 8)}
    local m = input({rint(200, 700), rint(60, 200)}, dt)
    local w = input({m.shape[2], rint(30, 90)}, dt)
    add {name = string.format("relu(matmul(softmax(x), w)) then cumsum %s%s", dt, sname(m.shape)), inputs = {m, w},
         f = function(p, q) return hl.cumsum(hl.nn.relu(hl.matmul(hl.nn.softmax(p, 2), q)), 1) end,
         tol = acc_tol(dt, m.shape[1] * m.shape[2], 4)}
    add {name = string.format("flip(transpose(x)) + x:sum(1) %s%s", dt, sname(m.shape)), inputs = {m},
         f = function(p) return hl.flip(p.T, 1) + hl.sum(p, 2) end, tol = acc_tol(dt, m.shape[2], 4)}
  end
end)
