-- scripts/bench: halua against NumPy and PyTorch, side by side in one run.
-- Usage: scripts/bench [--write]   (--write also writes docs/benchmarks.md)
local hl = require "halua"
local ffi = require "ffi"
ffi.cdef [[typedef struct { long tv_sec; long tv_nsec; } hl_timespec; int clock_gettime(int, hl_timespec *);]]
local ts = ffi.new("hl_timespec")
local function now()
  ffi.C.clock_gettime(1, ts)
  return tonumber(ts.tv_sec) + tonumber(ts.tv_nsec) * 1e-9
end
local function best_of(f, reps, inner)
  f()
  local best = math.huge
  for _ = 1, reps do
    local t0 = now()
    for _ = 1, inner do f() end
    best = math.min(best, (now() - t0) / inner)
  end
  return best
end

local root = arg[0]:match("^(.*)/scripts/") or "."
local write = false
for _, a in ipairs(arg) do if a == "--write" then write = true end end

io.stderr:write("bench: running the peers (NumPy, PyTorch)...\n")
-- the peers' OpenBLAS picks its AVX-512 kernels only with these two unset (benchmark only)
local p = io.popen("env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE /usr/bin/python3 " .. root .. "/scripts/bench_peers.py 2>/dev/null")
local peers_json = p and p:read("*a") or ""
if p then p:close() end
local peers = {}
for row, body in peers_json:gmatch('"([%w_]+)": {(.-)}') do
  peers[row] = {}
  for k, v in body:gmatch('"(%w+)": ([%d%.e%-+]+)') do peers[row][k] = tonumber(v) end
end

io.stderr:write("bench: running halua...\n")
local res = {}
local a, b = hl.ones({8}) + 0, hl.ones({8}) + 0
res.eager_add8_us = best_of(function() return a + b end, 5, 20000) * 1e6
local add = hl.jit(function(x, y) return x + y end)
res.jit_call_us = best_of(function() return add(a, b) end, 5, 20000) * 1e6
local n = 2 ^ 24
local x, y, z = hl.full({n}, 0.5) + 0, hl.full({n}, 0.25) + 0, hl.full({n}, 0.1) + 0
local fused = hl.jit(function(u, v, w) return hl.tanh(u * v + w) end)
res.fused_ms = best_of(function() return fused(x, y, z) end, 3, 3) * 1e3
local copy = hl.jit(function(u) return u + 0 end)
res.copy_GBs = 2 * 4 * n / best_of(function() return copy(x) end, 3, 5) / 1e9
local m = hl.ones({1024, 1024}) + 0
local mm = hl.jit(function(u, v) return hl.matmul(u, v) end)
res.matmul1024_gflops = 2 * 1024 ^ 3 / best_of(function() return mm(m, m) end, 3, 5) / 1e9

local rows = {
  {"eager_add8_us", "eager a + b, 8 float32 (us/op)", "lower"},
  {"jit_call_us", "cached jit call, one add, 8 float32 (us/call)", "lower"},
  {"fused_ms", "tanh(a*b+c), 2^24 float32, jit (ms)", "lower"},
  {"copy_GBs", "copy 2^24 float32 (GB/s, read+write)", "higher"},
  {"matmul1024_gflops", "matmul 1024^3 float32 (GFLOP/s)", "higher"},
}
local function fmt(v) return v and string.format("%.2f", v) or "n/a" end
local lines = {"| work | halua | NumPy | PyTorch | halua vs NumPy |", "|---|---|---|---|---|"}
for _, r in ipairs(rows) do
  local key, label, better = r[1], r[2], r[3]
  local h, np_, th = res[key], peers[key] and peers[key].numpy, peers[key] and peers[key].torch
  local ratio = "n/a"
  if h and np_ then
    ratio = better == "lower" and string.format("%.2fx faster", np_ / h) or string.format("%.0f%%", 100 * h / np_)
  end
  lines[#lines + 1] = string.format("| %s | %s | %s | %s | %s |", label, fmt(h), fmt(np_), fmt(th), ratio)
end
local table_text = table.concat(lines, "\n")
print(table_text)
if write then
  local f = assert(io.open(root .. "/docs/benchmarks.md", "w"))
  f:write("# Benchmarks\n\nWritten by `scripts/bench --write` on ", os.date("!%Y-%m-%d"), " (",
          io.popen("nproc"):read("*l"), " cores). Each figure is the best of several runs in one process;\n",
          "NumPy and PyTorch ran in the same invocation, so ratios compare like with like.\n\n",
          table_text, "\n")
  f:close()
  print("wrote docs/benchmarks.md")
end
