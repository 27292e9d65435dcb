-- Cold compile times, each probe in a fresh process (a compile is only cold once per process),
-- with the persistent compile cache off, cold (an empty cache directory that has Halide's runtime,
-- which is compiled once per machine) and warm (the same directory after the cold run).
--   luajit scripts/bench_compile.lua [--rounds N] [PROBE ...]   every probe (or those named), N rounds
--                                                               (default 3), the median of each
--   luajit scripts/bench_compile.lua --one PROBE                 one probe in this process: "PROBE ms"
-- The probes' arrays are made on the default device: HALUA_DEVICE=cuda times CUDA pipelines.
-- The first call of each probe includes tracing and, for the jitted ones, one run.
local hl = require "halua"
package.path = (arg[0]:match("^(.*/)") or "./") .. "?.lua;" .. package.path
local common = require "bench_common"
local now, uniform = common.now, common.uniform
local probes = {}
function probes.first_pipeline() return function() hl.jit(function(a) return a * 2 + 1 end)(hl.arange(8)) end end
function probes.second_pipeline()
  hl.jit(function(a) return a * 2 + 1 end)(hl.arange(8))
  return function() hl.jit(function(a) return hl.tanh(a) * 3 - a end)(hl.arange(8)) end
end
function probes.eager_first_uses()
  local x = hl.arange(8) + 0
  return function() hl.sin(x); hl.cos(x); hl.exp(x); x:astype("float64"); hl.sum(x); hl.matmul(hl.ones({4, 4}), hl.ones({4, 4})) end
end
for _, n in ipairs{20, 40, 80, 100, 400} do
  probes["chain" .. n] = function()
    local h = hl.jit(function(a) for i = 1, n do a = hl.tanh(a * 1.0001 + i * 1e-6) end return a end)
    local x = hl.ones({1000}) + 0
    return function() h(x) end
  end
end
for _, depth in ipairs{2, 4, 8, 16} do
  probes["deep_mlp" .. depth] = function()
    math.randomseed(1)
    local p = {}
    for i = 1, depth do p[i] = {w = uniform({64, 64}, 0.2), b = hl.zeros(64) + 0} end
    local function loss(q, xb)
      local h = xb
      for i = 1, depth do h = hl.tanh(hl.matmul(h, q[i].w) + q[i].b) end
      return (h * h):mean()
    end
    local step = hl.jit(function(q, xb)
      local l, g = hl.value_and_grad(loss)(q, xb)
      local r = {}
      for i = 1, depth do r[i] = {w = q[i].w - 0.01 * g[i].w, b = q[i].b - 0.01 * g[i].b} end
      return r, l
    end)
    local xb = hl.ones({32, 64}) + 0
    return function() step(p, xb) end
  end
end
function probes.mlp_step_compile()   -- scripts/bench's train step
  local params, batch, labels, _, sgd = common.mlp_setup("cpu")
  local sgd_step = hl.jit(sgd)
  return function() sgd_step:lower(params, batch, labels) end
end
local order = {"first_pipeline", "second_pipeline", "eager_first_uses", "chain20", "chain40", "chain80", "chain100",
               "chain400", "deep_mlp2", "deep_mlp4", "deep_mlp8", "deep_mlp16", "mlp_step_compile"}

if arg[1] == "--one" then
  local make = probes[arg[2]]
  if not make then error("bench_compile: no probe " .. tostring(arg[2])) end
  local f = make()
  local t0 = now()
  f()
  print(arg[2], string.format("%.1f", (now() - t0) * 1e3))
  return
end

local rounds, chosen = 3, {}
local i = 1
while arg[i] do
  if arg[i] == "--rounds" then rounds = assert(tonumber(arg[i + 1]), "bench_compile: --rounds takes a number"); i = i + 1
  elseif probes[arg[i]] then chosen[#chosen + 1] = arg[i]
  else error("bench_compile: no probe " .. arg[i] .. " (probes: " .. table.concat(order, " ") .. ")") end
  i = i + 1
end
if #chosen == 0 then chosen = order end
local self = arg[0]
local function run(p, env)
  local h = assert(io.popen(env .. " HALUA_QUIET=1 luajit '" .. self .. "' --one " .. p .. " 2>&1"))
  local out = h:read("*a")
  h:close()
  local ms = tonumber(out:match(p .. "%s+([%d%.]+)"))
  if not ms then error("bench_compile: probe " .. p .. " failed:\n" .. out) end
  return ms
end
local base = os.tmpname()
os.remove(base)
local function sh(cmd)
  local status = os.execute(cmd)
  assert(status == 0 or status == true, "bench_compile: failed: " .. cmd)
end
-- Halide's runtime for host pipelines, compiled once into a seed directory that every cold
-- directory starts from (on the host: with HALUA_DEVICE=cuda the probes run on the GPU, whose
-- pipelines call the runtime Halide builds in each process)
sh("mkdir -p '" .. base .. "/seed'")
run("first_pipeline", "HALUA_DEVICE=cpu HALUA_CACHE_DIR='" .. base .. "/seed'")
local modes = {"off", "cold", "warm"}
local times = {}
for round = 1, rounds do
  for _, p in ipairs(chosen) do
    local dir = base .. "/" .. round .. "-" .. p
    sh("mkdir -p -m 700 '" .. dir .. "' && cp '" .. base .. "'/seed/runtime-*.o '" .. dir .. "/'")
    times[p] = times[p] or {off = {}, cold = {}, warm = {}}
    table.insert(times[p].off, run(p, "HALUA_CACHE_DIR=off"))
    table.insert(times[p].cold, run(p, "HALUA_CACHE_DIR='" .. dir .. "'"))
    table.insert(times[p].warm, run(p, "HALUA_CACHE_DIR='" .. dir .. "'"))
  end
end
sh("rm -rf '" .. base .. "'")
local function median(t)
  table.sort(t)
  return t[math.floor((#t + 1) / 2)]
end
print(string.format("%-18s %10s %10s %10s   (ms, median of %d; first call of a new process)", "probe", "cache off", "cold", "warm", rounds))
for _, p in ipairs(chosen) do
  local m = {}
  for i, mode in ipairs(modes) do m[i] = median(times[p][mode]) end
  print(string.format("%-18s %10.1f %10.1f %10.1f", p, m[1], m[2], m[3]))
end
