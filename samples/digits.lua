-- What the digits samples share:
--   load(): the 8x8 digits set (samples/data/digits.csv.gz) as X (n x 64, float32, scaled to
--     [0,1]) and y (n labels 0..9, a Lua table), for a fixed random 80% (train) and the other 20%
--     (test);
--   mlp(seed, hidden): the MLP's parameters and logits function;
--   classes(y): labels as 1-based int32 class indices (cross_entropy's and argmax's convention);
--   options(script, defaults, usage): the command line's --name value pairs over the defaults;
--   train(script, opts, params, logits, data): minibatch Adam with progress lines, the test
--     accuracy, a checkpoint round trip through hl.savez, and the accuracy the script requires;
--   now(), a wall clock for the samples' timings.
local hl = require "halua"
local M = {}

-- wall-clock seconds (os.clock counts CPU time, which parallel pipelines multiply)
local ffi = require "ffi"
pcall(ffi.cdef, "typedef struct { long tv_sec; long tv_nsec; } halua_sample_timespec; int clock_gettime(int, halua_sample_timespec *);")
local ts = ffi.new("halua_sample_timespec")
function M.now()
  ffi.C.clock_gettime(1, ts)   -- CLOCK_MONOTONIC
  return tonumber(ts.tv_sec) + tonumber(ts.tv_nsec) * 1e-9
end

function M.load(path)
  path = path or (debug.getinfo(1, "S").source:match("^@(.*/)") or "./") .. "data/digits.csv.gz"
  local f = assert(io.popen("gzip -dc '" .. path .. "'"), "halua: digits: cannot read " .. path)
  local rows, labels = {}, {}
  for line in f:lines() do
    local v = {}
    for num in line:gmatch("[^,]+") do v[#v + 1] = tonumber(num) / 16 end
    labels[#labels + 1] = math.floor(table.remove(v) * 16 + 0.5)
    rows[#rows + 1] = v
  end
  f:close()
  if #rows == 0 then error("halua: digits: no rows read from " .. path, 0) end
  -- the held-out fifth is a random one (a fixed shuffle): the file is ordered by writer, and its
  -- last fifth alone would test on writers never seen in training
  local order = {}
  for i = 1, #rows do order[i] = i end
  local state = 12345
  for i = #order, 2, -1 do
    state = (1103515245 * state + 12345) % 2147483648   -- a fixed LCG: the same split everywhere
    local j = state % i + 1
    order[i], order[j] = order[j], order[i]
  end
  local ntrain = math.floor(#rows * 0.8)
  local function part(a, b)
    local r, l = {}, {}
    for i = a, b do
      r[#r + 1] = rows[order[i]]
      l[#l + 1] = labels[order[i]]
    end
    return hl.array(r), l
  end
  local xtr, ytr = part(1, ntrain)
  local xte, yte = part(ntrain + 1, #rows)
  return xtr, ytr, xte, yte
end

-- The samples' two-layer perceptron 64-hidden-10: its parameters (Glorot weights from `seed`,
-- zero biases) and its logits(p, x)
function M.mlp(seed, hidden)
  local keys = hl.random.split(hl.random.key(seed), 2)
  local params = {
    w1 = hl.nn.init.glorot(keys[1], {64, hidden}), b1 = hl.zeros(hidden),
    w2 = hl.nn.init.glorot(keys[2], {hidden, 10}), b2 = hl.zeros(10),
  }
  local function logits(p, x)
    local h = hl.nn.relu(hl.matmul(x, p.w1) + p.b1)
    return hl.matmul(h, p.w2) + p.b2
  end
  return params, logits
end

function M.classes(labels)
  local c = {}
  for i, l in ipairs(labels) do c[i] = l + 1 end
  return hl.array(c, "int32")
end

-- --name value pairs (dashes in names become underscores) over `defaults`; a number where the
-- default is one. A name that is not an option prints the usage line and exits with 2.
function M.options(script, defaults, usage)
  local opts = {}
  for k, v in pairs(defaults) do opts[k] = v end
  local i = 1
  while i <= #arg do
    local key = (arg[i]:match("^%-%-([%w-]+)$") or ""):gsub("-", "_")
    local value = arg[i + 1]
    if opts[key] == nil or value == nil or (type(opts[key]) == "number" and not tonumber(value)) then
      io.stderr:write("usage: luajit samples/" .. script .. ".lua " .. usage .. "\n")
      os.exit(2)
    end
    opts[key] = type(opts[key]) == "number" and tonumber(value) or value
    i = i + 2
  end
  return opts
end

-- Minibatch training of logits(p, x) by cross-entropy with Adam, the rate decaying to 0 along a
-- cosine over the whole run; the step (forward, loss, gradient, update) is one jitted function.
-- data: xtr, ctr, xte, cte (classes), t_start. opts: epochs, batch, lr, seed, checkpoint,
-- min_accuracy. Returns the trained parameters and the test accuracy; errors (naming `script`)
-- when the checkpoint does not reload exactly or the accuracy is below opts.min_accuracy.
function M.train(script, opts, params, logits, data)
  local xtr, ctr, xte, cte = data.xtr, data.ctr, data.xte, data.cte
  local ntrain = xtr.shape[1]
  local function loss(p, x, c) return hl.nn.cross_entropy(logits(p, x), c) end
  local steps_per_epoch = math.floor(ntrain / opts.batch)
  local opt = hl.optim.adam(hl.optim.cosine_decay(opts.lr, opts.epochs * steps_per_epoch))
  local train_step = hl.jit(function(p, state, x, c)
    local l, g = hl.value_and_grad(loss)(p, x, c)
    local new_p, new_state = opt.update(g, state, p)
    return new_p, new_state, l
  end, {name = "train_step", dynamic_axes = {{}, {}, {1}, {1}}})   -- (one program for any batch size)
  -- (one program for the training and the test set: the number of images is a dynamic axis)
  local accuracy = hl.jit(function(p, x, c)
    return hl.mean(hl.eq(hl.argmax(logits(p, x), 2), c):astype("float32"))
  end, {name = "accuracy", dynamic_axes = {{}, {1}, {1}}})

  -- an epoch visits the training set in a fresh random order, in whole batches
  local function shuffled_batches(epoch)
    local order = hl.random.permutation(hl.random.fold_in(hl.random.key(opts.seed + 1), epoch), ntrain)
    local xs, cs = hl.take(xtr, order, 1), hl.take(ctr, order, 1)
    local batches = {}
    for b = 1, steps_per_epoch do
      local lo, hi = (b - 1) * opts.batch + 1, b * opts.batch
      batches[b] = {xs[{{lo, hi}}], cs[{{lo, hi}}]}
    end
    return batches
  end

  local state = opt.init(params)
  for epoch = 1, opts.epochs do
    local t0 = M.now()
    local total, count = 0, 0
    for _, batch in ipairs(shuffled_batches(epoch)) do
      local l
      params, state, l = train_step(params, state, batch[1], batch[2])
      total, count = total + l:item(), count + 1
    end
    local dt = M.now() - t0
    if epoch == 1 or epoch % 5 == 0 or epoch == opts.epochs then
      print(string.format("epoch %3d  loss %.4f  train acc %.1f%%  test acc %.1f%%  %6.0f images/s", epoch, total / count,
                          100 * accuracy(params, xtr, ctr):item(), 100 * accuracy(params, xte, cte):item(),
                          count * opts.batch / dt))
    end
  end

  local acc = accuracy(params, xte, cte):item()
  print(string.format("test accuracy %.2f%% after %d epochs, %.1f s in all", 100 * acc, opts.epochs, M.now() - data.t_start))

  -- a checkpoint round trip: the reloaded parameters classify exactly as the trained ones
  hl.savez(opts.checkpoint, params)
  local restored = hl.loadz(opts.checkpoint)
  local acc2 = accuracy(restored, xte, cte):item()
  print(string.format("checkpoint %s: reloaded, test accuracy %.2f%%", opts.checkpoint, 100 * acc2))
  local ci = hl.cache_info()
  print(string.format("%d pipelines compiled in %.0f ms, %d cache hits", ci.misses, ci.compile_ms, ci.hits))
  if acc2 ~= acc then error("halua: " .. script .. ": the reloaded checkpoint gives a different accuracy", 0) end
  if acc < opts.min_accuracy then
    error(string.format("halua: %s: test accuracy %.2f%% is below %.0f%%", script, 100 * acc, 100 * opts.min_accuracy), 0)
  end
  return params, acc
end

return M
