-- Runs generated programs (support/program_gen.lua) eagerly and under hl.jit and checks them
-- against each other and against NumPy; shared by fuzz/programs.lua and program_fuzz_spec.lua.
--
--   local fuzz = require "support.program_fuzz"
--   local res = fuzz.check(progs [, opts])   -- res.failures: {prog=, stage=, msg=}, ...
--   print(fuzz.report(res.failures[1]))      -- the seed, the message, standalone Lua and NumPy
--
-- For each program: its NumPy form goes into one batch (one python3 process for all of them,
-- support/numpy.lua), it runs eagerly, and under jit in a bundle: up to `bundle` programs traced
-- into ONE jitted function (a table of input tables in, a table of results out), since a
-- compile costs tens of milliseconds to seconds. A bundle that fails is re-run program by
-- program to name the one at fault. Each result must have the dtype and shape halua's rules
-- give (the generator predicts them), and values within the tolerance: a few units in the last
-- place of the result dtype plus K times the element's rounding sensitivity (mc() in
-- numpy_eval.py); integers and bool exactly, except where NumPy's perturbed runs themselves
-- disagree. Eager and jit are compared with each other the same way. An error from halua on
-- these programs (all valid) is a failure, whatever it says.
local hl = require "halua"
local np = require "support.numpy"
local gen = require "support.program_gen"

local M = {}

M.K = 4                       -- how many times an element's rounding sensitivity is tolerated
M.ULPS = 4                    -- and units in the last place of the result dtype
local ATOL = {float32 = 2 ^ -140, float64 = 2 ^ -1060, float16 = 2 ^ -24, bfloat16 = 2 ^ -130}
local FLOAT, EPS = gen.FLOAT, gen.EPS

local function flat(x) return hl.reshape(x, {x.size}):totable() end
local function sname(s) return "[" .. table.concat(s, ",") .. "]" end
local function num(v) return type(v) == "number" and string.format("%.9g", v) or tostring(v) end

-- the multi-index of flat element i (1-based) of shape
local function where(shape, i)
  local idx, rem = {}, i - 1
  for d = #shape, 1, -1 do idx[d] = rem % shape[d] + 1; rem = math.floor(rem / shape[d]) end
  return "[" .. table.concat(idx, ",") .. "]"
end

-- nil when `got` (an array) matches the reference values `want` (a Lua list) of the program's
-- dtype, element by element within the tolerance spread allows; else what differs
function M.compare(prog, got, want, spread, against)
  if not hl.core.is_array(got) then return "gave " .. type(got) .. ", not an array" end
  if got.dtype ~= prog.dtype then
    return string.format("dtype %s, expected %s (halua's documented rule)", got.dtype, prog.dtype)
  end
  local shape = got.shape
  if sname(shape) ~= sname(prog.shape) then return string.format("shape %s, expected %s", sname(shape), sname(prog.shape)) end
  local g = flat(got)
  if #g ~= #want then return string.format("%d values, %s has %d", #g, against, #want) end
  local dt = got.dtype
  local eps, atol = EPS[dt], ATOL[dt]
  for i, w in ipairs(want) do
    local v, s = g[i], spread and spread[i] or 0
    local bad
    if s == math.huge then
      bad = false                                  -- rounding decides this element: not compared
    elseif type(w) == "boolean" or type(v) == "boolean" then
      local a, b = v, w
      if type(a) ~= "boolean" then a = a ~= 0 end
      if type(b) ~= "boolean" then b = b ~= 0 end
      bad = a ~= b
    elseif not FLOAT[dt] then
      bad = v ~= w
    elseif w ~= w then
      bad = v == v
    elseif w == math.huge or w == -math.huge then
      bad = v ~= w
    else
      bad = not (v == v and math.abs(v - w) <= atol + M.ULPS * eps * math.abs(w) + M.K * s)
    end
    if bad then
      return string.format("at %s: %s, %s %s (tolerance from rounding %s)", where(shape, i), num(v), against, num(w), num(s))
    end
  end
  return nil
end

-- whether a program's gradient is checked: a safe program with a float32 or float64 result and
-- input, whose reference values are finite and decided by rounding nowhere (a gradient has no
-- tolerance of its own: where the forward values are that sensitive, so may it be)
function M.grad_ok(p)
  if p.wild or (p.dtype ~= "float32" and p.dtype ~= "float64") then return false end
  local has_float = false
  for _, inp in ipairs(p.inputs) do if inp.dtype == "float32" or inp.dtype == "float64" then has_float = true end end
  if not has_float then return false end
  for i, v in ipairs(p.w.values) do
    if v ~= v or v == math.huge or v == -math.huge or p.w.spread[i] == math.huge then return false end
  end
  return true
end

-- eager and jitted gradients: the same dtype and shape, and each element within 1e-3 (float32;
-- 1e-9 float64) of the largest magnitude (the two sum and fuse in different orders)
function M.compare_grad(ge, gj)
  if not hl.core.is_array(gj) then return "gave " .. type(gj) .. ", not an array" end
  if ge.dtype ~= gj.dtype then return "dtype " .. gj.dtype .. ", eager " .. ge.dtype end
  if sname(ge.shape) ~= sname(gj.shape) then return "shape " .. sname(gj.shape) .. ", eager " .. sname(ge.shape) end
  local a, b = flat(ge), flat(gj)
  local scale = 1
  for _, v in ipairs(a) do if v == v and math.abs(v) ~= math.huge then scale = math.max(scale, math.abs(v)) end end
  local tol = (ge.dtype == "float64" and 1e-9 or 1e-3) * scale
  for i = 1, #a do
    local x, y = a[i], b[i]
    local same = (x ~= x and y ~= y) or x == y or math.abs(x - y) <= tol
    if not same then return string.format("at %s: %s, eager %s (tolerance %s)", where(ge.shape, i), num(y), num(x), num(tol)) end
  end
  return nil
end

local function err_text(e) return (tostring(e):gsub("\n.*", "")) end

-- a list of programs -> {ran =, failures = {{prog=, stage=, msg=}, ...}, times = {...}}
-- opts.jit (default true), opts.bundle (programs per jitted function, default 12), opts.clock,
-- opts.trace (each program's seed on stderr before it runs, for crashes), opts.grad (also
-- check the gradient of each float program's sum, eager against jit)
function M.check(progs, opts)
  opts = opts or {}
  local clock = opts.clock or os.clock
  local bundle_size = opts.bundle or 12
  local failures, times = {}, {numpy = 0, eager = 0, jit = 0}
  local function fail(p, stage, msg)
    failures[#failures + 1] = {prog = p, stage = stage, msg = msg}
    p.failed = true
  end
  local batch = np.batch()
  local live = {}
  for _, p in ipairs(progs) do
    local ok, f = pcall(gen.compile, p, hl)
    if not ok then
      fail(p, "lua", "the program's Lua text does not load: " .. err_text(f))
    else
      p.f = f
      p.args = gen.arrays(p, hl)
      p.want = batch:add(p.np, p.args)
      live[#live + 1] = p
    end
  end
  local t0 = clock()
  batch:run()
  times.numpy = clock() - t0

  -- eagerly
  t0 = clock()
  local checked = {}
  for _, p in ipairs(live) do
    local w = p.want()
    if w.error then
      fail(p, "numpy", "NumPy could not evaluate the program (a generator bug): " .. w.error)
    else
      p.w = w
      if opts.trace then io.stderr:write("eager ", p.seed, "\n"); io.stderr:flush() end
      local ok, r = pcall(p.f, unpack(p.args))
      if not ok then
        fail(p, "eager", "halua raised on a valid program: " .. err_text(r))
      else
        p.eager = r
        local msg = M.compare(p, r, w.values, w.spread, "NumPy")
        if msg then fail(p, "eager", "eager result against NumPy: " .. msg) end
      end
      checked[#checked + 1] = p
    end
  end
  times.eager = clock() - t0

  -- under jit, in bundles
  -- (a wild program's NaN and infinities may come out otherwise under jit: Halide 14 simplifies
  -- floats assuming finite values, x * 0 to 0, x - x to 0, x / x to 1 (docs/halide.md); the
  -- elements that depend on them are not compared there, spread_jit)
  local function check_jit(p, r)
    local spread = p.w.spread_jit or p.w.spread
    local msg = M.compare(p, r, p.w.values, spread, "NumPy")
    if msg then fail(p, "jit", "jitted result against NumPy: " .. msg); return end
    if p.eager then
      msg = M.compare(p, r, flat(p.eager), spread, "eager")
      if msg then fail(p, "jit", "jitted result against the eager one: " .. msg) end
    end
  end
  t0 = clock()
  if opts.jit ~= false then
    local i = 1
    while i <= #checked do
      local b, nin = {}, 0
      while i <= #checked and #b < bundle_size and nin + #checked[i].args <= 60 do
        b[#b + 1] = checked[i]
        nin = nin + #checked[i].args
        i = i + 1
      end
      local fns, args = {}, {}
      for j, p in ipairs(b) do fns[j], args[j] = p.f, p.args end
      local jf = hl.jit(function(all)
        local out = {}
        for j, f in ipairs(fns) do out[j] = f(unpack(all[j])) end
        return out
      end)
      if opts.trace then io.stderr:write("jit ", b[1].seed, " to ", b[#b].seed, "\n"); io.stderr:flush() end
      local ok, res = pcall(jf, args)
      if ok then
        for j, p in ipairs(b) do check_jit(p, res[j]) end
      else
        -- alone, to name the program at fault
        local named = false
        for _, p in ipairs(b) do
          local ok1, r = pcall(hl.jit(p.f), unpack(p.args))
          if not ok1 then
            fail(p, "jit", "halua raised under jit on a valid program: " .. err_text(r))
            named = true
          else
            check_jit(p, r)
          end
        end
        if not named then
          fail(b[1], "jit", "a jitted function of " .. #b .. " programs (seeds " .. b[1].seed .. " to " .. b[#b].seed ..
               ") failed, but each passes alone: " .. err_text(res))
        end
      end
    end
  end
  times.jit = clock() - t0

  -- gradients: d sum(program) / d (its first float32 or float64 input), eagerly (on the tape)
  -- and under jit (traced into the bundle's pipeline), against each other
  t0 = clock()
  if opts.grad then
    local ready = {}
    for _, p in ipairs(checked) do
      if not p.failed and M.grad_ok(p) then
        local argnum
        for k, a in ipairs(p.args) do if a.dtype == "float32" or a.dtype == "float64" then argnum = k break end end
        local f = p.f
        p.g = hl.grad(function(...) return hl.sum(f(...)) end, argnum)
        p.argnum = argnum
        local ok, g = pcall(p.g, unpack(p.args))
        if not ok then fail(p, "grad", "halua raised taking the gradient eagerly: " .. err_text(g))
        else p.geager = g; ready[#ready + 1] = p end
      end
    end
    local i = 1
    while i <= #ready do
      local b, nin = {}, 0
      while i <= #ready and #b < bundle_size and nin + #ready[i].args <= 60 do
        b[#b + 1] = ready[i]
        nin = nin + #ready[i].args
        i = i + 1
      end
      local gs, args = {}, {}
      for j, p in ipairs(b) do gs[j], args[j] = p.g, p.args end
      local ok, res = pcall(hl.jit(function(all)
        local out = {}
        for j, g in ipairs(gs) do out[j] = g(unpack(all[j])) end
        return out
      end), args)
      for j, p in ipairs(b) do
        local r = res and res[j]
        if not ok then
          local ok1, r1 = pcall(hl.jit(p.g), unpack(p.args))
          if not ok1 then fail(p, "grad", "halua raised taking the gradient under jit: " .. err_text(r1)) end
          r = ok1 and r1 or nil
        end
        if r then
          local msg = M.compare_grad(p.geager, r)
          if msg then fail(p, "grad", "the jitted gradient against the eager one (input " .. p.argnum .. "): " .. msg) end
        end
      end
    end
  end
  times.grad = clock() - t0
  for _, p in ipairs(progs) do p.f, p.args, p.want, p.eager, p.g, p.geager = nil, nil, nil, nil, nil, nil end
  return {ran = #progs, failures = failures, times = times}
end

-- what to print for a failure: enough to reproduce it without the fuzzer
function M.report(f)
  local p = f.prog
  return table.concat({
    string.format("FAIL program %d (%s%s, %d statements -> %s%s): %s", p.seed, f.stage, p.wild and ", wild" or "", p.nops,
                  p.dtype, sname(p.shape), f.msg),
    "  rerun: luajit fuzz/programs.lua --program " .. p.seed .. (p.forced_wild and " --wild" or "") .. (f.stage == "grad" and " --grad" or ""),
    "---- Lua",
    gen.lua_repro(p),
    "---- NumPy (P: each rounding step, the identity when run as written)",
    gen.np_repro(p),
    "----",
  }, "\n")
end

return M
