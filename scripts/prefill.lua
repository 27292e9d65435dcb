-- Fills the compile cache (hl.cache_info().disk_dir) with the eager kernels that the samples and a
-- typical shell session use, so that a newcomer's first run loads them instead of compiling them.
-- scripts/prefill runs it as several processes at once, one per core, each taking every n-th task:
--
--   luajit scripts/prefill.lua PART NPARTS       (PART = 1 .. NPARTS)
local hl = require "halua"
local part, nparts = tonumber(arg[1] or 1), tonumber(arg[2] or 1)
local root = debug.getinfo(1, "S").source:match("^@(.*/)scripts/") or "./"

local tasks = {}
local function task(f) tasks[#tasks + 1] = f end

-- a sample, as a user runs it (with short settings but for the demo's): its eager kernels (and its
-- jitted pipelines for those settings) land in the cache
local function sample(script, args)
  task(function()
    local ckpt = os.tmpname()
    local cmd = string.format("cd '%s' && HALUA_QUIET=1 luajit samples/%s %s > /dev/null 2>&1", root, script,
                              args:gsub("CHECKPOINT", ckpt .. ".npz"))
    local r = os.execute(cmd)
    os.remove(ckpt)
    os.remove(ckpt .. ".npz")
    if r ~= 0 and r ~= true then io.stderr:write("halua: prefill: samples/" .. script .. " failed (ignored)\n") end
  end)
end
-- (the demo's sample with its own settings: its train step's learning-rate schedule spans all the
-- epochs, a constant of the step, so a shorter run would compile another step than the demo's)
sample("digits_mlp.lua", "--min-accuracy 0 --checkpoint CHECKPOINT")
sample("digits_cnn.lua", "--epochs 1 --min-accuracy 0 --checkpoint CHECKPOINT")
sample("logreg.lua", "--steps 2 --min-accuracy 0")
sample("newton.lua", "--steps 1 --min-accuracy 0")
sample("centroids.lua", "")
sample("heat.lua", "")

-- a shell session: creation, arithmetic with numbers and broadcast arrays, the common unary
-- functions, comparisons, reductions, shapes and casts, for the dtypes people type
for _, dtype in ipairs({"float32", "float64", "int32", "int64"}) do
  task(function()
    local float = dtype:match("float")
    for _, shape in ipairs({{}, {5}, {3, 4}, {2, 3, 4}}) do
      local a = hl.arange(hl.prod(hl.array(shape, "int64")):item()):reshape(shape):astype(dtype)
      local b = hl.ones(shape, dtype)
      local _ = {a + b, a - b, a * b, a + 1, a * 2, 1 - a, a:lt(b), a:eq(b), hl.where(a:gt(1), a, b), -a, hl.abs(a),
                 hl.maximum(a, b), hl.minimum(a, 1), a ^ 2, hl.sum(a), hl.max(a), hl.min(a), hl.mean(a)}
      if float then _ = {a / b, a / 2, hl.exp(a), hl.log(b), hl.sqrt(b), hl.sin(a), hl.cos(a), hl.tanh(a), hl.std(a)} end
      if #shape >= 1 then
        _ = {hl.sum(a, 1), hl.argmax(a), hl.argmax(a, #shape), hl.max(a, #shape), hl.mean(a, 1), a + b[1], hl.cumsum(a, 1),
             a:astype("float32"), a:astype("int32"), a:astype("bool"), a:astype(float and "int64" or "float64"), tostring(a)}
      end
      if #shape == 2 then _ = {hl.matmul(a, b.T), a.T + 1, a[1], a[{{1, 2}, {}}], hl.sum(a, 2), a + b[1]:reshape({1, 4})} end
    end
  end)
end
task(function()
  local key = hl.random.key(0)
  local _ = {hl.random.normal(key, {3, 4}), hl.random.uniform(key, {5}), hl.random.split(key, 3), hl.linspace(0, 1, 5),
             hl.eye(3), hl.zeros({2, 2}), hl.full({2}, 7), hl.array({true, false}) }
  local x = hl.random.normal(key, {4, 4})
  _ = {hl.linalg.solve(x, hl.ones(4)), hl.sort(x), hl.argsort(x), hl.nn.softmax(x), hl.nn.relu(x), hl.logical_not(x:gt(0))}
end)

local done = 0
for i, f in ipairs(tasks) do
  if (i - 1) % nparts == part - 1 then
    f()
    done = done + 1
  end
end
local info = hl.cache_info()
print(string.format("halua: prefill %d/%d: %d tasks, %d kernels compiled here, %d loaded", part, nparts, done, info.misses - info.disk_hits, info.disk_hits))
