-- scripts/bench: halua against NumPy, PyTorch and JAX, side by side in one run.
-- Usage: scripts/bench [--write] [--dist]   (--write also writes docs/benchmarks.md; --dist runs
-- only the hl.dist table, scripts/bench_dist.lua)
-- The peers run under $HALUA_PEERS_PYTHON (scripts/bench sets it: build/peers' venv, or Debian's).
-- `--compiles` (internal): only the compile times, one "row value" a line (see below).
local ffi = require "ffi"
ffi.cdef [[int setenv(const char *, const char *, int); char *mkdtemp(char *);]]
local root = arg[0]:match("^(.*)/scripts/") or "."
local write, device, compiles_only, dist_only = false, "cpu", false, false
for i, a in ipairs(arg) do
  if a == "--write" then write = true end
  if a == "--device" then device = arg[i + 1] end
  if a == "--compiles" then compiles_only = true end
  if a == "--dist" then dist_only = true end
end
-- On the CPU the bench keeps halua's compile cache on disk (where halua has one) in a directory of
-- its own, made empty here: compile times are then cold, whatever a user's cache holds, and the
-- bench may clear it. HALUA_CACHE_DIR=off stays off; the --compiles processes get theirs.
local function new_cache_dir()
  local buf = ffi.new("char[64]", "/tmp/halua-bench-cache-XXXXXX")
  return ffi.C.mkdtemp(buf) ~= nil and ffi.string(buf) or nil
end
local own_cache
if device == "cpu" and not compiles_only and os.getenv("HALUA_CACHE_DIR") ~= "off" then
  own_cache = new_cache_dir()
  if own_cache then ffi.C.setenv("HALUA_CACHE_DIR", own_cache, 1) end
end
local hl = require "halua"
package.path = root .. "/scripts/?.lua;" .. package.path
local common = require "bench_common"
local now, best_of = common.now, common.best_of
if dist_only then
  require("bench_dist").run(root, write)
  os.exit(0)
end

local function fmt(v) return v and string.format("%.2f", v) or "n/a" end
-- halua's figure against a peer's: "85% of NumPy", "1.62x faster than Torch"
local function ratio(h, ref, refname, better)
  if not (h and ref) then return "n/a" end
  if better == "higher" then return string.format("%.0f%% of %s", 100 * h / ref, refname)
  elseif ref >= h then return string.format("%.2fx faster than %s", ref / h, refname)
  else return string.format("%.2fx slower than %s", h / ref, refname) end
end
-- the table, with the ratio against the first peer that has the row, and (`vs`) against one peer
-- named in the last column; `note` goes under it; --write puts both into docs/<doc> between the
-- bench markers, keeping the notes written around them
local BEGIN, END = "<!-- bench table: written by scripts/bench -->", "<!-- end of bench table -->"
local function print_table(rows, res, peers, names, title, doc, vs, note)
  local lines = {"| work | halua | " .. table.concat(names, " | ") .. " | halua vs peer |" .. (vs and " halua vs " .. vs .. " |" or ""),
                 "|---|---|" .. string.rep("---|", #names) .. "---|" .. (vs and "---|" or "")}
  for _, r in ipairs(rows) do
    local key, label, better = r[1], r[2], r[3]
    local h, cells, ref, refname = res[key], {}, nil, nil
    for i, nm in ipairs(names) do
      local v = peers[key] and peers[key][nm:lower()]
      cells[i] = fmt(v)
      if v and not ref then ref, refname = v, nm end
    end
    local line = string.format("| %s | %s | %s | %s |", label, fmt(h), table.concat(cells, " | "), ratio(h, ref, refname, better))
    if vs then line = line .. " " .. ratio(h, peers[key] and peers[key][vs:lower()], vs, better) .. " |" end
    lines[#lines + 1] = line
  end
  local text = table.concat(lines, "\n") .. (note and "\n\n" .. note or "")
  print(text)
  if write then
    os.execute("mkdir -p '" .. root .. "/docs'")
    local path = root .. "/docs/" .. doc
    local f = io.open(path)
    local old = f and f:read("*a") or ""
    if f then f:close() end
    local block = BEGIN .. "\nWritten by `scripts/bench" .. (device == "cpu" and "" or " --device " .. device) ..
                  " --write` on " .. os.date("!%Y-%m-%d") .. "; each figure is the best of several runs in one\n" ..
                  "process, the peers ran in the same invocation.\n\n" .. text .. "\n" .. END
    local a, b = old:find(BEGIN, 1, true), select(2, old:find(END, 1, true))
    local new = a and b and (old:sub(1, a - 1) .. block .. old:sub(b + 1)) or ("# " .. title .. "\n\n" .. block .. "\n" .. old)
    f = assert(io.open(path, "w"))
    f:write(new)
    f:close()
    print("wrote docs/" .. doc)
  end
end

-- the peers' JSON: {row: {peer: number}}, and {peer: string} under "_versions", "_source", "_failed"
local function read_peers(cmd)
  local p = io.popen(cmd)
  local json = p and p:read("*a") or ""
  if p then p:close() end
  local peers = {}
  for row, body in json:gmatch('"([%w_]+)": {(.-)}') do
    peers[row] = {}
    if row:sub(1, 1) == "_" then
      for k, v in body:gmatch('"([^"]+)": "([^"]*)"') do peers[row][k] = v end
    else
      for k, v in body:gmatch('"(%w+)": ([%d%.e%-+]+)') do peers[row][k] = tonumber(v) end
    end
  end
  -- a script that does not run at all (a syntax error) gives nothing: say so, not just n/a
  if next(peers) == nil then
    io.stderr:write("bench: the peers' script gave no results; run it by hand to see why: " .. cmd:gsub(" 2>/dev/null$", "") .. "\n")
  end
  return peers
end

-- the MLP (scripts/bench_common.lua) on `dev`: forward + backward, and an SGD step;
-- `time(f, reps, inner)` is the device's timer. Fills res.mlp_*.
local mlp_setup = common.mlp_setup
local function mlp_rows(res, dev, time)
  local params, batch, labels, mlp_loss, sgd = mlp_setup(dev)
  local grad_step = hl.jit(hl.value_and_grad(mlp_loss))
  res.mlp_grad_ms = time(function() return grad_step(params, batch, labels) end, 5, 3) * 1e3
  local sgd_step = hl.jit(sgd)
  local t0 = now()
  sgd_step:lower(params, batch, labels)
  res.mlp_compile_ms = (now() - t0) * 1e3
  res.mlp_sgd_ms = time(function() return sgd_step(params, batch, labels) end, 5, 3) * 1e3
  if dev == "cpu" then
    -- the same step scheduled by Halide's Mullapudi2016 autoscheduler, for comparison
    local auto_step = hl.jit(sgd_step.f, {schedule = "auto"})
    t0 = now()
    auto_step:lower(params, batch, labels)
    res.mlp_auto_compile_ms = (now() - t0) * 1e3
    res.mlp_auto_sgd_ms = time(function() return auto_step(params, batch, labels) end, 5, 3) * 1e3
  end
end
-- `--compiles`: the compile times of the train step and of the heat sample's three loops
-- (10,000 steps), each once in this process; with a disk cache filled by a process before, the
-- warm figures. Prints "row ms" lines, and "disk_hits n" (0, or none, where nothing came from disk).
if compiles_only then
  package.path = root .. "/samples/?.lua;" .. package.path
  local heat = require "heat"
  local params, batch, labels, _, sgd = mlp_setup("cpu")
  local plate = heat.plate(128)
  local centre = hl.zeros({128, 128}):at({64, 64}):set(1)
  local t0 = now()
  hl.jit(sgd):lower(params, batch, labels)
  print("mlp_compile", (now() - t0) * 1e3)
  for _, c in ipairs {{"heat", heat.simulate}, {"heat_grad", heat.sensitivity}, {"heat_jvp", heat.perturbation}} do
    t0 = now()
    if c[1] == "heat_jvp" then c[2](10000):lower(plate, centre) else c[2](10000):lower(plate) end
    print(c[1] .. "_compile", (now() - t0) * 1e3)
  end
  print("disk_hits", hl.cache_info().disk_hits)
  os.exit(0)
end

local mlp_table_rows = {
  {"mlp_grad_ms", "MLP 784-1024-1024-10, batch 256: value_and_grad, jit (ms)", "lower"},
  {"mlp_sgd_ms", "MLP train step (value_and_grad + SGD), jit (ms)", "lower"},
  {"mlp_compile_ms", "compile time of that train step (ms)", "lower"},
}

if device == "cuda" then
  -- the GPU rows: copy bandwidth, a fused chain, matmul 4096^3, against PyTorch and JAX
  io.stderr:write("bench: running the peers (PyTorch, JAX) on the GPU...\n")
  local peers = read_peers((os.getenv("HALUA_PYTHON") or "python3") .. " " .. root .. "/scripts/bench_peers_cuda.py")
  io.stderr:write("bench: running halua on the GPU...\n")
  local sync = hl.core.sync
  local function gpu_best(f, reps, inner)
    return best_of(function() for _ = 1, inner do f() end sync() end, reps, 1) / inner
  end
  local res = {}
  local n = 2 ^ 26
  local x, y, z = hl.full({n}, 0.5):to("cuda"), hl.full({n}, 0.25):to("cuda"), hl.full({n}, 0.1):to("cuda")
  local copy = hl.jit(function(u) return u + 0 end)
  res.copy_GBs = 8 * n / gpu_best(function() return copy(x) end, 5, 10) / 1e9
  local fused = hl.jit(function(u, v, w) return hl.tanh(u * v + w) end)
  res.fused_ms = gpu_best(function() return fused(x, y, z) end, 5, 10) * 1e3
  local m = hl.ones({4096, 4096}):to("cuda")
  local mm = hl.jit(function(u, v) return hl.matmul(u, v) end)
  res.matmul4096_gflops = 2 * 4096 ^ 3 / gpu_best(function() return mm(m, m) end, 3, 3) / 1e9
  mlp_rows(res, "cuda", gpu_best)
  -- samples/heat.lua on the GPU: a compiled loop whose body is a GPU pipeline, its carry in
  -- device memory; its compile time is flat in the number of steps
  package.path = root .. "/samples/?.lua;" .. package.path
  local heat = require "heat"
  local plate = heat.plate(128):to("cuda")
  hl.cache_clear()
  local t0 = now()
  heat.simulate(10000):lower(plate)
  res.heat_compile_10000_ms = (now() - t0) * 1e3
  local run = heat.simulate(1000)
  res.heat_run_ms = gpu_best(function() return run(plate) end, 3, 1) * 1e3
  print_table({
    {"copy_GBs", "copy 2^26 float32 (GB/s, read+write)", "higher"},
    {"fused_ms", "tanh(a*b+c), 2^26 float32 (ms)", "lower"},
    {"matmul4096_gflops", "matmul 4096^3 float32 (GFLOP/s)", "higher"},
    {"heat_run_ms", "heat sample: 1,000 steps on 128x128, jit fori_loop (ms)", "lower"},
    {"heat_compile_10000_ms", "heat sample: compile, fori_loop of 10,000 steps (ms)", "lower"},
    unpack(mlp_table_rows),
  }, res, peers, {"Torch", "JAX"}, "Benchmarks on CUDA", "benchmarks-cuda.md")
  return
end

io.stderr:write("bench: running the peers (NumPy, PyTorch, JAX)...\n")
-- the peers' OpenBLAS picks its AVX-512 kernels only with these two unset (benchmark only)
local peers = read_peers("env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE " .. (os.getenv("HALUA_PEERS_PYTHON") or "/usr/bin/python3") ..
                         " " .. root .. "/scripts/bench_peers.py 2>/dev/null")
local failed = {}
for what, why in pairs(peers._failed or {}) do failed[#failed + 1] = "bench: n/a: " .. what .. ": " .. why .. "\n" end
table.sort(failed)
io.stderr:write(table.concat(failed))
-- the line under the table: which peers, which versions, from where
local versions, v = {}, peers._versions or {}
for _, p in ipairs {{"numpy", "NumPy"}, {"torch", "PyTorch"}, {"jax", "JAX"}} do
  versions[#versions + 1] = p[2] .. " " .. (v[p[1]] or "n/a")
end
local peers_note = "Peers: " .. table.concat(versions, ", ") ..
                   ((v.jaxlib and v.jaxlib ~= v.jax) and " (jaxlib " .. v.jaxlib .. ")" or "") ..
                   ", on the CPU, from " .. ((peers._source or {}).python or "nowhere") .. "."

io.stderr:write("bench: running halua...\n")
local res = {}
-- what a user waits for before the first line of a script runs: a new process that loads halua
-- (the peers: `python -c "import numpy"`), the best of 10
res.startup_ms = best_of(function()
  local r = os.execute("exec luajit -e 'require \"halua\"'")
  assert(r == 0 or r == true, "bench: luajit -e 'require \"halua\"' failed")
end, 10, 1) * 1e3
local a, b = hl.ones({8}) + 0, hl.ones({8}) + 0
res.eager_add8_us = best_of(function() return a + b end, 5, 20000) * 1e6
-- the performance issue's yardstick: a cached call with three array arguments
local add3 = hl.jit(function(x, y, w) return x + y + w end)
res.jit_call_us = best_of(function() return add3(a, b, a) end, 5, 20000) * 1e6
-- the same call in another harness: one plain loop of 10^5 calls, every collection in it
-- (best_of's batches of 20,000 may fall between collections)
res.jit_call_loop_us = best_of(function() for _ = 1, 1e5 do add3(a, b, a) end end, 3, 1) * 1e6 / 1e5
-- a call with a pytree: a table of four arrays and an array, a table of results
local tp = {w1 = a, b1 = b, w2 = a, b2 = b}
local tree_step = hl.jit(function(q, x)
  local r = {}
  for k, v in pairs(q) do r[k] = v * 0.99 + x end
  return hl.sum(x), r
end)
res.jit_tree_call_us = best_of(function() return tree_step(tp, a) end, 5, 20000) * 1e6
local c1000 = hl.ones({1000}) + 0
res.eager_c2c_us = best_of(function() return c1000 * 2 + c1000 end, 5, 10000) * 1e6
-- the shell user's habit: a Lua loop updating a small array with numbers, 10^5 times
local acc = hl.zeros({8}) + 0
res.eager_loop_ms = best_of(function()
  for i = 1, 1e5 do acc = acc * 0.999 + i * 1e-6 end
end, 3, 1) * 1e3
local n = 2 ^ 24
local x, y, z = hl.full({n}, 0.5) + 0, hl.full({n}, 0.25) + 0, hl.full({n}, 0.1) + 0
local fused = hl.jit(function(u, v, w) return hl.tanh(u * v + w) end)
res.fused_ms = best_of(function() return fused(x, y, z) end, 3, 3) * 1e3
local copy = hl.jit(function(u) return u + 0 end)
res.copy_GBs = 2 * 4 * n / best_of(function() return copy(x) end, 3, 5) / 1e9
local m = hl.ones({1024, 1024}) + 0
local mm = hl.jit(function(u, v) return hl.matmul(u, v) end)
res.matmul1024_gflops = 2 * 1024 ^ 3 / best_of(function() return mm(m, m) end, 3, 5) / 1e9
for _, c in ipairs {{256, 5, 50}, {2048, 3, 1}} do
  local k = c[1]
  local mk = hl.ones({k, k}) + 0
  res["matmul" .. k .. "_gflops"] = 2 * k ^ 3 / best_of(function() return mm(mk, mk) end, c[2], c[3]) / 1e9
end
local la, lw = hl.ones({256, 784}) + 0, hl.ones({784, 1024}) + 0
res.mlp_layer_gflops = 2 * 256 * 784 * 1024 / best_of(function() return mm(la, lw) end, 5, 10) / 1e9
-- a weight gradient as an eager user writes it: a transposed view times a matrix
local lh, lg = hl.ones({256, 1024}) + 0, hl.ones({256, 1024}) + 0
res.wgrad_gflops = 2 * 1024 * 256 * 1024 / best_of(function() return hl.matmul(lh.T, lg) end, 5, 10) / 1e9
-- 4096x4096 float32: a full sum, column sums, row softmax and row logsumexp, a transpose that moves data
local big = hl.random.uniform(hl.random.key(1), {4096, 4096})
local total = hl.jit(function(u) return hl.sum(u) end)
res.sum4096_ms = best_of(function() return total(big) end, 3, 3) * 1e3
local colsum = hl.jit(function(u) return hl.sum(u, 1) end)
res.colsum4096_ms = best_of(function() return colsum(big) end, 3, 3) * 1e3
local softmax = hl.jit(function(u) return hl.nn.softmax(u, 2) end)
res.softmax4096_ms = best_of(function() return softmax(big) end, 3, 1) * 1e3
local lse = hl.jit(function(u) return hl.logsumexp(u, 2) end)
res.logsumexp4096_ms = best_of(function() return lse(big) end, 3, 1) * 1e3
local transpose = hl.jit(function(u) return hl.transpose(u) end)
res.transpose4096_GBs = 2 * 4 * 4096 ^ 2 / best_of(function() return transpose(big) end, 3, 2) / 1e9
mlp_rows(res, "cpu", best_of)
res.mlp_sgd_compiled_ms = res.mlp_sgd_ms   -- halua's step is always compiled; the row is for torch.compile's

-- hl.nn.dot_product_attention: batch 8, sequence 256, 8 heads of dim 64, float32, no mask; the
-- forward pass and the gradient by q, k and v, each one jitted function
do
  local ks = hl.random.split(hl.random.key(3), 3)
  local q, k, v = {}, {}, {}
  for i, t in ipairs {q, k, v} do t[1] = hl.random.uniform(ks[i], {8, 256, 8, 64}) - 0.5 end
  q, k, v = q[1], k[1], v[1]
  local fwd = hl.jit(function(a, b, c) return hl.nn.dot_product_attention(a, b, c) end)
  res.attention_ms = best_of(function() return fwd(q, k, v) end, 5, 3) * 1e3
  local grad = hl.jit(hl.grad(function(a, b, c) return hl.sum(hl.nn.dot_product_attention(a, b, c)) end, {1, 2, 3}))
  res.attention_grad_ms = best_of(function() return grad(q, k, v) end, 5, 3) * 1e3
end

-- hl.linalg.solve: one 256x256 system, and a batch of 64 small ones (LAPACK per matrix)
local function wellcond(shape)
  local n, t = 1, {}
  for _, v in ipairs(shape) do n = n * v end
  for i = 1, n do t[i] = math.random() - 0.5 end
  return hl.reshape(hl.array(t, "float64"), shape) + hl.eye(shape[#shape], "float64") * shape[#shape]
end
local sa, sb = wellcond({256, 256}), hl.ones({256}, "float64")
res.solve256_ms = best_of(function() return hl.linalg.solve(sa, sb) end, 5, 10) * 1e3
local ba, bb = wellcond({64, 32, 32}), hl.ones({64, 32}, "float64")
res.solve_batched_ms = best_of(function() return hl.linalg.solve(ba, bb) end, 5, 10) * 1e3

-- x:at(idx):add(u): 10^6 float32 updates into 2^16 bins, one scatter in a jitted pipeline (the
-- updates walk their indices in order), against NumPy's np.add.at
local sc_idx = hl.reshape(hl.array((function()
  local t = {}
  for i = 1, 1000000 do t[i] = (i * 7919) % 65536 + 1 end
  return t
end)(), "int32"), {1000000})
local sc_u, sc_x = hl.full({1000000}, 0.5), hl.zeros({65536})
local scatter_add = hl.jit(function(x, i, u) return x:at(i):add(u) end)
res.scatter_add_ms = best_of(function() return scatter_add(sc_x, sc_idx, sc_u) end, 3, 3) * 1e3

-- hl.linalg's decompositions (LAPACK gesdd, geqrf/orgqr, syevd per matrix): one 256x256 matrix
-- and a batch of 64 32x32 ones, float64 and float32; eigh's matrices symmetric
for _, dt in ipairs {"float64", "float32"} do
  local tag = dt == "float64" and "f64" or "f32"
  local one, many = wellcond({256, 256}):astype(dt), wellcond({64, 32, 32}):astype(dt)
  local sym1, symn = (one + one.T) * 0.5, (many + hl.transpose(many, {1, 3, 2})) * 0.5
  local decomps = {
    svd = function(x) return hl.linalg.svd(x, false) end,
    qr = function(x) return hl.linalg.qr(x) end,
    eigh = function(x) return hl.linalg.eigh(x) end,
  }
  for name, f in pairs(decomps) do
    local a, b = name == "eigh" and sym1 or one, name == "eigh" and symn or many
    res[name .. "256_" .. tag .. "_ms"] = best_of(function() return f(a) end, 3, 3) * 1e3
    res[name .. "_batched_" .. tag .. "_ms"] = best_of(function() return f(b) end, 3, 3) * 1e3
  end
end

-- hl.fft (engine/host/hl_fft.c), eager as NumPy's: complex-to-complex transforms of powers of two
-- and of primes (Bluestein's algorithm), 2^10 to 2^20 points, complex64 and complex128; rfft of
-- float32; and a batch of 256 lanes of 1024 along the last axis. The inputs are those of
-- scripts/bench_peers.py's fft_rows (a cosine and a sine of the index as the parts).
for _, case in ipairs {{"c64", 1024}, {"c64", 65536}, {"c64", 1048576}, {"c64", 1021}, {"c64", 65521},
                       {"c64", 1048573}, {"c128", 65536}, {"c128", 65521}} do
  local tag, n = case[1], case[2]
  local i = hl.arange(n, tag == "c64" and "float32" or "float64")
  local z = hl.complex(hl.cos(i * 0.001), hl.sin(i * 0.002))
  res["fft_" .. tag .. "_" .. n .. "_ms"] = best_of(function() return hl.fft.fft(z) end, 3, n > 100000 and 1 or 3) * 1e3
end
do
  local r = hl.cos(hl.arange(1048576, "float32") * 0.001)
  res.rfft_f32_1048576_ms = best_of(function() return hl.fft.rfft(r) end, 3, 1) * 1e3
  local i = hl.reshape(hl.arange(256 * 1024, "float32"), {256, 1024})
  local zb = hl.complex(hl.cos(i * 0.001), hl.sin(i * 0.002))
  res.fft_c64_batched_ms = best_of(function() return hl.fft.fft(zb) end, 3, 3) * 1e3
end

-- hl.jit's dynamic_axes (docs/dynamic_axes.md): the MLP train step with its batch axis dynamic
-- against the same step specialised to batch 256, and a fused chain over 2^24, alternated in one
-- run (each the best of three rounds); and the MLP's forward pass called with every batch size
-- from 1 to 256, counting the pipelines compiled
do
  local params, batch, labels, _, step = mlp_setup("cpu")
  local fixed, dyn = hl.jit(step), hl.jit(step, {dynamic_axes = {{}, {1}, {1}}})
  local f1, f2 = hl.jit(function(u, v, w) return hl.tanh(u * v + w) end), hl.jit(function(u, v, w) return hl.tanh(u * v + w) end, {dynamic_axes = {1}})
  local ts, td, tf1, tf2 = math.huge, math.huge, math.huge, math.huge
  for _ = 1, 3 do
    ts = math.min(ts, best_of(function() return fixed(params, batch, labels) end, 3, 3))
    td = math.min(td, best_of(function() return dyn(params, batch, labels) end, 3, 3))
    tf1 = math.min(tf1, best_of(function() return f1(x, y, z) end, 3, 3))
    tf2 = math.min(tf2, best_of(function() return f2(x, y, z) end, 3, 3))
  end
  res.dyn_mlp_sgd_ms, res.dyn_mlp_sgd_ratio = td * 1e3, td / ts
  res.dyn_fused_ratio = tf2 / tf1
  local forward = hl.jit(function(p, xb)
    local h = hl.maximum(hl.matmul(xb, p.w1) + p.b1, 0)
    h = hl.maximum(hl.matmul(h, p.w2) + p.b2, 0)
    return hl.matmul(h, p.w3) + p.b3
  end, {dynamic_axes = {{}, {1}}})
  local rows = {}
  for k = 1, 256 do rows[k] = batch[{{1, k}}] end   -- (views: nothing compiles for them)
  hl.matmul(rows[2], params.w1)   -- (the engine's matmul kernel, which the program calls, compiled first)
  local misses = hl.cache_info().misses
  for k = 1, 256 do forward(params, rows[k]) end
  res.dyn_forward_compiles = hl.cache_info().misses - misses
  -- an RNN's value_and_grad (a scan over time, hidden 64, batch 32) with its time axis dynamic,
  -- called with every sequence length from 1 to 64; then its run time at length 64 against the
  -- same function specialised to it
  local function rnn_loss(w, xs, h0)
    local _, ys = hl.scan(function(h, xt) local hn = hl.tanh(hl.matmul(h, w) + xt) return hn, hl.sum(hn * hn) end, h0, xs)
    return hl.sum(ys)
  end
  local w, h0 = hl.reshape(hl.sin(hl.arange(64 * 64, "float32")), {64, 64}) * 0.01, hl.ones({32, 64}) * 0.1
  local seqs = {}
  for t = 1, 64 do seqs[t] = hl.reshape(hl.cos(hl.arange(t * 32 * 64, "float32") * 0.37), {t, 32, 64}) end
  local rnn_dyn = hl.jit(hl.value_and_grad(rnn_loss), {dynamic_axes = {{}, {1}, {}}})
  local rnn_fixed = hl.jit(hl.value_and_grad(rnn_loss))
  misses = hl.cache_info().misses
  for t = 1, 64 do rnn_dyn(w, seqs[t], h0) end
  res.dyn_rnn_compiles = hl.cache_info().misses - misses
  local tr1, tr2 = math.huge, math.huge
  for _ = 1, 3 do
    tr1 = math.min(tr1, best_of(function() return rnn_fixed(w, seqs[64], h0) end, 3, 3))
    tr2 = math.min(tr2, best_of(function() return rnn_dyn(w, seqs[64], h0) end, 3, 3))
  end
  res.dyn_rnn_ratio = tr2 / tr1
end

-- samples/heat.lua: a jitted fori_loop compiles its body once, so its compile time is flat in the
-- number of steps; the run against the same loop written in NumPy
package.path = root .. "/samples/?.lua;" .. package.path
local heat = require "heat"
local plate = heat.plate(128)
-- and the gradient through that loop (a backward compiled loop), and a perturbation carried
-- through it by forward mode (a tangent loop): compile time flat too
local centre = hl.zeros({128, 128}):at({64, 64}):set(1)
for name, make in pairs {heat = heat.simulate, heat_grad = heat.sensitivity, heat_jvp = heat.perturbation} do
  local args = name == "heat_jvp" and {plate, centre} or {plate}
  for _, steps in ipairs {100, 10000} do
    hl.cache_clear(own_cache and {disk = true} or nil)   -- each compile from scratch: the body's pipeline included
    local t0 = now()
    make(steps):lower(unpack(args))
    res[name .. "_compile_" .. steps .. "_ms"] = (now() - t0) * 1e3
  end
  local run = make(1000)
  res[name .. "_run_ms"] = best_of(function() return run(unpack(args)) end, 3, 1) * 1e3
end
-- warm compiles, as the peers' are measured: two new processes on one new cache directory, the
-- first filling it; the second's figures count where something came from the disk cache
if own_cache then
  local dir = new_cache_dir()
  local function compiles()
    local p = io.popen("HALUA_CACHE_DIR='" .. dir .. "' luajit '" .. root .. "/scripts/bench.lua' --compiles 2>/dev/null")
    local t = {}
    for k, v in p:read("*a"):gmatch("(%S+)\t(%S+)") do t[k] = tonumber(v) end
    p:close()
    return t
  end
  if dir then
    compiles()
    local warm = compiles()
    if (warm.disk_hits or 0) > 0 then
      for _, k in ipairs {"mlp", "heat", "heat_grad", "heat_jvp"} do res[k .. "_compile_warm_ms"] = warm[k .. "_compile"] end
    end
    os.execute("rm -rf '" .. dir .. "'")
  end
  os.execute("rm -rf '" .. own_cache .. "'")
end

print_table({
  {"eager_add8_us", "eager a + b, 8 float32 (us/op)", "lower"},
  {"jit_call_us", "cached jit call, 3 array args (a + b + c), 8 float32 (us/call)", "lower"},
  {"jit_call_loop_us", "that call in one loop of 10^5 calls, collections included (us/call)", "lower"},
  {"jit_tree_call_us", "cached jit call, a table of 4 arrays and an array in, a table out, 8 float32 (us/call)", "lower"},
  {"eager_c2c_us", "eager c * 2 + c, 1000 float32 (us)", "lower"},
  {"eager_loop_ms", "loop of 10^5 eager updates x = x * 0.999 + i * 1e-6, 8 float32 (ms)", "lower"},
  {"fused_ms", "tanh(a*b+c), 2^24 float32, jit (ms)", "lower"},
  {"copy_GBs", "copy 2^24 float32 (GB/s, read+write)", "higher"},
  {"matmul1024_gflops", "matmul 1024^3 float32 (GFLOP/s)", "higher"},
  {"matmul256_gflops", "matmul 256^3 float32 (GFLOP/s)", "higher"},
  {"matmul2048_gflops", "matmul 2048^3 float32 (GFLOP/s)", "higher"},
  {"mlp_layer_gflops", "MLP layer 256x784 @ 784x1024 float32 (GFLOP/s)", "higher"},
  {"wgrad_gflops", "weight gradient h.T @ g, h and g 256x1024 float32, eager (GFLOP/s)", "higher"},
  {"sum4096_ms", "sum of 4096x4096 float32, jit (ms)", "lower"},
  {"colsum4096_ms", "column sums of 4096x4096 float32, jit (ms)", "lower"},
  {"softmax4096_ms", "row softmax of 4096x4096 float32, jit (ms)", "lower"},
  {"logsumexp4096_ms", "row logsumexp of 4096x4096 float32, jit (ms)", "lower"},
  {"transpose4096_GBs", "transpose 4096x4096 float32 (GB/s, read+write)", "higher"},
  {"mlp_grad_ms", "MLP 784-1024-1024-10, batch 256: value_and_grad, jit (ms)", "lower"},
  {"mlp_sgd_ms", "MLP train step (value_and_grad + SGD), jit (ms)", "lower"},
  {"startup_ms", "a new process that loads the library: luajit -e 'require \"halua\"', python -c 'import ...' (ms)", "lower"},
  {"mlp_compile_ms", "compile time of that train step, cold (ms)", "lower"},
  {"mlp_compile_warm_ms", "its compile, warm: persistent cache, new process (ms)", "lower"},
  {"mlp_sgd_compiled_ms", "the train step compiled: halua's jit, torch.compile (ms)", "lower"},
  {"mlp_auto_sgd_ms", "that train step, schedule = \"auto\" (Mullapudi2016), jit (ms)", "lower"},
  {"mlp_auto_compile_ms", "compile time of the autoscheduled step (ms)", "lower"},
  {"attention_ms", "dot_product_attention, batch 8, seq 256, 8 heads, dim 64, float32, jit (ms)", "lower"},
  {"attention_grad_ms", "its gradient by q, k and v, jit(grad) (ms)", "lower"},
  {"solve256_ms", "linalg.solve 256x256 float64, one right-hand side (ms)", "lower"},
  {"solve_batched_ms", "linalg.solve 64 x (32x32) float64, batched (ms)", "lower"},
  {"scatter_add_ms", "x:at(idx):add(u), 10^6 float32 updates into 2^16 bins, jit (ms)", "lower"},
  {"dyn_mlp_sgd_ms", "MLP train step with dynamic_axes (batch axis), batch 256, jit (ms)", "lower"},
  {"dyn_mlp_sgd_ratio", "its run time / the step specialised to 256, same run (target <= 1.10)", "lower"},
  {"dyn_fused_ratio", "tanh(a*b+c), 2^24 float32, dynamic_axes / specialised (target <= 1.05)", "lower"},
  {"dyn_forward_compiles", "MLP forward called with batch sizes 1..256, dynamic_axes: pipelines compiled", "lower"},
  {"dyn_rnn_compiles", "RNN value_and_grad (scan, hidden 64, batch 32) called with lengths 1..64, dynamic time axis: pipelines compiled", "lower"},
  {"dyn_rnn_ratio", "its run time at length 64 / the same specialised to 64, same run", "lower"},

  {"fft_c64_1024_ms", "fft.fft complex64, n = 2^10 (ms)", "lower"},
  {"fft_c64_65536_ms", "fft.fft complex64, n = 2^16 (ms)", "lower"},
  {"fft_c64_1048576_ms", "fft.fft complex64, n = 2^20 (ms)", "lower"},
  {"fft_c64_1021_ms", "fft.fft complex64, n = 1021 (prime) (ms)", "lower"},
  {"fft_c64_65521_ms", "fft.fft complex64, n = 65521 (prime) (ms)", "lower"},
  {"fft_c64_1048573_ms", "fft.fft complex64, n = 1048573 (prime) (ms)", "lower"},
  {"fft_c128_65536_ms", "fft.fft complex128, n = 2^16 (ms)", "lower"},
  {"fft_c128_65521_ms", "fft.fft complex128, n = 65521 (prime) (ms)", "lower"},
  {"rfft_f32_1048576_ms", "fft.rfft float32, n = 2^20 (ms)", "lower"},
  {"fft_c64_batched_ms", "fft.fft complex64, 256 x 1024 along the last axis (ms)", "lower"},

  {"svd256_f64_ms", "linalg.svd (reduced) 256x256 float64 (ms)", "lower"},
  {"svd_batched_f64_ms", "linalg.svd (reduced) 64 x (32x32) float64, batched (ms)", "lower"},
  {"svd256_f32_ms", "linalg.svd (reduced) 256x256 float32 (ms)", "lower"},
  {"svd_batched_f32_ms", "linalg.svd (reduced) 64 x (32x32) float32, batched (ms)", "lower"},
  {"qr256_f64_ms", "linalg.qr 256x256 float64 (ms)", "lower"},
  {"qr_batched_f64_ms", "linalg.qr 64 x (32x32) float64, batched (ms)", "lower"},
  {"qr256_f32_ms", "linalg.qr 256x256 float32 (ms)", "lower"},
  {"qr_batched_f32_ms", "linalg.qr 64 x (32x32) float32, batched (ms)", "lower"},
  {"eigh256_f64_ms", "linalg.eigh 256x256 float64 (ms)", "lower"},
  {"eigh_batched_f64_ms", "linalg.eigh 64 x (32x32) float64, batched (ms)", "lower"},
  {"eigh256_f32_ms", "linalg.eigh 256x256 float32 (ms)", "lower"},
  {"eigh_batched_f32_ms", "linalg.eigh 64 x (32x32) float32, batched (ms)", "lower"},
  {"heat_compile_100_ms", "heat sample: compile, fori_loop of 100 steps (ms)", "lower"},
  {"heat_compile_10000_ms", "heat sample: compile, fori_loop of 10,000 steps (ms)", "lower"},
  {"heat_compile_warm_ms", "heat sample: compile, 10,000 steps, warm: persistent cache (ms)", "lower"},
  {"heat_run_ms", "heat sample: 1,000 steps on 128x128, jit fori_loop (ms)", "lower"},
  {"heat_grad_compile_100_ms", "its gradient by the plate: compile, 100 steps (ms)", "lower"},
  {"heat_grad_compile_10000_ms", "its gradient by the plate: compile, 10,000 steps (ms)", "lower"},
  {"heat_grad_compile_warm_ms", "its gradient: compile, 10,000 steps, warm: persistent cache (ms)", "lower"},
  {"heat_grad_run_ms", "its gradient by the plate: 1,000 steps, jit grad (ms)", "lower"},
  {"heat_jvp_compile_100_ms", "a perturbation through it, forward mode: compile, 100 steps (ms)", "lower"},
  {"heat_jvp_compile_10000_ms", "a perturbation through it, forward mode: compile, 10,000 steps (ms)", "lower"},
  {"heat_jvp_compile_warm_ms", "a perturbation: compile, 10,000 steps, warm: persistent cache (ms)", "lower"},
  {"heat_jvp_run_ms", "a perturbation through it: 1,000 steps, jit jvp (ms)", "lower"},
}, res, peers, {"NumPy", "Torch", "JAX"}, "Benchmarks on the CPU", "benchmarks.md", "JAX", peers_note)

-- the JAX paper's comparison: the same train step interpreted (plain Lua loops), eager, compiled
local paper_rows, paper_note = require("bench_paper").run(now, best_of)
local lines = {"| the MLP train step (784-1024-1024-10, batch 256, SGD) | ms per step | vs plain Lua |", "|---|---|---|"}
for _, r in ipairs(paper_rows) do
  lines[#lines + 1] = string.format("| %s | %.2f | %.1fx |", r[1], r[2], paper_rows[1][2] / r[2])
end
local paper = table.concat(lines, "\n") .. "\n\n" .. paper_note .. "."
print("\n" .. paper)
if write then
  common.write_block(root .. "/docs/benchmarks.md", "<!-- paper table: written by scripts/bench -->",
                     "<!-- end of paper table -->", paper, "Interpreted and compiled")
end

-- hl.dist over Open MPI: the train step on 1 and 2 ranks, the allreduce's bandwidth
require("bench_dist").run(root, write)
