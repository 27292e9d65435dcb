-- halua's flagship sample: a two-layer perceptron trained on the real 8x8 digits set (1,797
-- images; the last fifth held out for testing). The whole training step -- forward pass, loss,
-- gradient and Adam update -- is one jitted function, compiled once to one pipeline.
--
--   luajit samples/digits_mlp.lua [--epochs N] [--hidden N] [--batch N] [--lr X] [--seed N]
--                                 [--checkpoint PATH] [--min-accuracy P]
local hl = require "halua"
local here = debug.getinfo(1, "S").source:match("^@(.*/)") or "./"
package.path = here .. "?.lua;" .. package.path
local digits = require "digits"

local opts = {epochs = 20, hidden = 512, batch = 16, lr = 2e-3, seed = 0, min_accuracy = 0.97,
              checkpoint = (os.getenv("TMPDIR") or "/tmp") .. "/halua_digits_mlp.npz"}
do
  local i = 1
  while i <= #arg do
    local name = arg[i]:match("^%-%-([%w-]+)$")
    local key = name and name:gsub("-", "_")
    if not key or opts[key] == nil or arg[i + 1] == nil then
      io.stderr:write("usage: luajit samples/digits_mlp.lua [--epochs N] [--hidden N] [--batch N] [--lr X] [--seed N] " ..
                      "[--checkpoint PATH] [--min-accuracy P]\n")
      os.exit(2)
    end
    opts[key] = type(opts[key]) == "number" and assert(tonumber(arg[i + 1]), "halua: digits_mlp: " .. arg[i] .. " needs a number")
                or arg[i + 1]
    i = i + 2
  end
end

local t_start = digits.now()
local xtr, ytr, xte, yte = digits.load()
-- labels as 1-based class indices (hl.nn.cross_entropy's and hl.argmax's convention)
local function classes(labels)
  local c = {}
  for i, l in ipairs(labels) do c[i] = l + 1 end
  return hl.array(c, "int32")
end
local ctr, cte = classes(ytr), classes(yte)
-- standardised pixels (statistics of the training set only; +0.5 keeps the always-blank corners at 0)
local mean, scale = hl.mean(xtr, 1), hl.std(xtr, 1) + 0.5
xtr, xte = (xtr - mean) / scale, (xte - mean) / scale
local ntrain = xtr.shape[1]
print(string.format("digits: %d training and %d test images, %d pixels each; MLP 64-%d-10, Adam lr %g (cosine decay), batch %d",
                    ntrain, xte.shape[1], xtr.shape[2], opts.hidden, opts.lr, opts.batch))

-- parameters: a pytree (a Lua table of arrays)
local keys = hl.random.split(hl.random.key(opts.seed), 2)
local k1, k2 = keys[1], keys[2]
local params = {
  w1 = hl.nn.init.glorot(k1, {64, opts.hidden}), b1 = hl.zeros(opts.hidden),
  w2 = hl.nn.init.glorot(k2, {opts.hidden, 10}), b2 = hl.zeros(10),
}

local function logits(p, x)
  local h = hl.nn.relu(hl.matmul(x, p.w1) + p.b1)
  return hl.matmul(h, p.w2) + p.b2
end
local function loss(p, x, c) return hl.nn.cross_entropy(logits(p, x), c) end

-- Adam with the rate decaying to 0 along a cosine over the whole run
local steps_per_epoch = math.floor(ntrain / opts.batch)
local opt = hl.optim.adam(hl.optim.cosine_decay(opts.lr, opts.epochs * steps_per_epoch))
local train_step = hl.jit(function(p, state, x, c)
  local l, g = hl.value_and_grad(loss)(p, x, c)
  local new_p, new_state = opt.update(g, state, p)
  return new_p, new_state, l
end, {name = "train_step"})
local accuracy = hl.jit(function(p, x, c)
  return hl.mean(hl.eq(hl.argmax(logits(p, x), 2), c):astype("float32"))
end, {name = "accuracy"})

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
  local t0 = digits.now()
  local total, count = 0, 0
  for _, batch in ipairs(shuffled_batches(epoch)) do
    local l
    params, state, l = train_step(params, state, batch[1], batch[2])
    total, count = total + l:item(), count + 1
  end
  local dt = digits.now() - t0
  if epoch == 1 or epoch % 5 == 0 or epoch == opts.epochs then
    print(string.format("epoch %3d  loss %.4f  train acc %.1f%%  test acc %.1f%%  %6.0f images/s", epoch, total / count,
                        100 * accuracy(params, xtr, ctr):item(), 100 * accuracy(params, xte, cte):item(),
                        count * opts.batch / dt))
  end
end

local acc = accuracy(params, xte, cte):item()
print(string.format("test accuracy %.2f%% after %d epochs, %.1f s in all", 100 * acc, opts.epochs, digits.now() - t_start))

-- a checkpoint round trip: the reloaded parameters classify exactly as the trained ones
hl.savez(opts.checkpoint, params)
local restored = hl.loadz(opts.checkpoint)
local acc2 = accuracy(restored, xte, cte):item()
print(string.format("checkpoint %s: reloaded, test accuracy %.2f%%", opts.checkpoint, 100 * acc2))
local ci = hl.cache_info()
print(string.format("%d pipelines compiled in %.0f ms, %d cache hits", ci.misses, ci.compile_ms, ci.hits))
if acc2 ~= acc then error("halua: digits_mlp: the reloaded checkpoint gives a different accuracy", 0) end
if acc < opts.min_accuracy then
  error(string.format("halua: digits_mlp: test accuracy %.2f%% is below %.0f%%", 100 * acc, 100 * opts.min_accuracy), 0)
end
