-- The program fuzzer: random small array programs (tests/lua/support/program_gen.lua), each run
-- eagerly and under hl.jit and checked against the other and against NumPy
-- (tests/lua/support/program_fuzz.lua says how).
--
--   luajit fuzz/programs.lua [--seconds N] [--seed S] [--count K] [--batch B] [--program SEED] [--show]
--
-- Runs until N seconds (default 60 when no --count is given) or K programs have run, in batches
-- of B programs (default 120: one NumPy process and a few jitted bundles each). Program i of a
-- run has seed S * 100000 + i; a failure prints that seed, the message, and the program as a
-- standalone Lua script and a NumPy script; `--program SEED` runs that one program alone
-- (with --show, prints it first). --wild makes every program a wild one (NaN, inf and -0.0 in
-- the inputs, no range guards; otherwise one in twenty is); --trace prints each program's seed on
-- stderr before it runs (to name the program a crash ends the run in); --grad also checks the
-- gradient of each float program's sum, eager against jit. The last line is the summary; the exit status is 1 when any
-- program failed. Run with scripts/env.sh sourced (or from the checkout: the paths are added).
local root = (debug.getinfo(1, "S").source:match("^@(.*)/fuzz/[^/]*$")) or "."
package.path = root .. "/lua/?.lua;" .. root .. "/lua/?/init.lua;" .. root .. "/tests/lua/?.lua;" .. package.path
package.cpath = root .. "/build/?.so;" .. package.cpath

local usage = "usage: luajit fuzz/programs.lua [--seconds N] [--seed S] [--count K] [--batch B] [--program SEED] [--show] [--wild] [--trace] [--grad]"
local opts = {}
local i = 1
while i <= #arg do
  local a = arg[i]
  local function value()
    i = i + 1
    local v = tonumber(arg[i])
    if not v then io.stderr:write(usage, "\n", a, " needs a number\n"); os.exit(2) end
    return v
  end
  if a == "--seconds" then opts.seconds = value()
  elseif a == "--seed" then opts.seed = value()
  elseif a == "--count" then opts.count = value()
  elseif a == "--batch" then opts.batch = value()
  elseif a == "--program" then opts.program = value()
  elseif a == "--show" then opts.show = true
  elseif a == "--wild" then opts.wild = true
  elseif a == "--trace" then opts.trace = true
  elseif a == "--grad" then opts.grad = true
  elseif a == "-h" or a == "--help" then print(usage); os.exit(0)
  else io.stderr:write(usage, "\n"); os.exit(2) end
  i = i + 1
end

local hl = require "halua"
local gen = require "support.program_gen"
local fuzz = require "support.program_fuzz"

local ffi = require "ffi"
pcall(ffi.cdef, "typedef struct { long tv_sec; long tv_nsec; } halua_fuzz_timespec; int clock_gettime(int, halua_fuzz_timespec *);")
local ts = ffi.new("halua_fuzz_timespec")
local function wall()
  if ffi.C.clock_gettime(1, ts) == 0 then return tonumber(ts.tv_sec) + tonumber(ts.tv_nsec) * 1e-9 end
  return os.time()
end

if opts.program then
  local p = gen.generate(opts.program, {wild = opts.wild})
  if opts.show then
    print(gen.lua_repro(p))
    print(gen.np_repro(p))
  end
  local res = fuzz.check({p}, {trace = opts.trace, grad = opts.grad})
  for _, f in ipairs(res.failures) do print(fuzz.report(f)) end
  print(string.format("programs: 1 run, %d failed, program %d", #res.failures > 0 and 1 or 0, opts.program))
  os.exit(#res.failures > 0 and 1 or 0)
end

local seed = opts.seed or (os.time() % 1000000000)
local seconds = opts.seconds or (opts.count and math.huge or 60)
local count = opts.count or math.huge
local batch = opts.batch or 120
local start = wall()
io.stderr:write(string.format("programs: seed %d (rerun with --seed %d)\n", seed, seed))
local ran, failed, n = 0, 0, 0
local seen = {}
while ran < count and wall() - start < seconds do
  local progs = {}
  for _ = 1, math.min(batch, count - ran) do
    n = n + 1
    progs[#progs + 1] = gen.generate(seed * 100000 + n, {wild = opts.wild})
  end
  local res = fuzz.check(progs, {trace = opts.trace, grad = opts.grad})
  ran = ran + res.ran
  for _, f in ipairs(res.failures) do
    if not seen[f.prog.seed] then
      seen[f.prog.seed] = true
      failed = failed + 1
      print(fuzz.report(f))
      io.stdout:flush()
    end
  end
end
local elapsed = wall() - start
print(string.format("programs: %d run, %d failed, seed %d (%.1f s, %.1f programs/s)", ran, failed, seed, elapsed,
                    ran / math.max(elapsed, 1e-9)))
os.exit(failed > 0 and 1 or 0)
