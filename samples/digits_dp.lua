-- The digits MLP trained data-parallel over MPI: every rank holds the same parameters, takes its
-- shard of each global batch (hl.dist.shard), and one jitted step computes its gradient,
-- averages it over the ranks with one bucketed allreduce inside the pipeline
-- (hl.dist.value_and_grad) and applies the update. With equal shards that is exactly the
-- single-process step on the whole global batch, so any number of ranks reaches the same
-- parameters (to float rounding) and the same accuracy. Rank 1 prints and writes the checkpoint.
--
--   mpirun -np 2 scripts/halua samples/digits_dp.lua [--epochs N] [--hidden N] [--batch N]
--                [--lr X] [--seed N] [--checkpoint PATH] [--min-accuracy P]
--   luajit samples/digits_dp.lua ...        (one process: a job of one rank)
-- --batch is the global batch (a multiple of the number of ranks).
local hl = require "halua"
local here = debug.getinfo(1, "S").source:match("^@(.*/)") or "./"
package.path = here .. "?.lua;" .. package.path
local digits = require "digits"
local dist = hl.dist

local opts = digits.options("digits_dp", {
  epochs = 10, hidden = 256, batch = 64, lr = 0.1, seed = 0, min_accuracy = 0.95,
  checkpoint = (os.getenv("TMPDIR") or "/tmp") .. "/halua_digits_dp.npz"},
  "[--epochs N] [--hidden N] [--batch N] [--lr X] [--seed N] [--checkpoint PATH] [--min-accuracy P]")

local rank, size = dist.init()
if opts.batch % size ~= 0 then
  error(string.format("halua: digits_dp: the global batch %d is not a multiple of the %d ranks", opts.batch, size), 0)
end
local t_start = digits.now()
local xtr, ytr, xte, yte = digits.load()
local ctr, cte = digits.classes(ytr), digits.classes(yte)
local mean, scale = hl.mean(xtr, 1), hl.std(xtr, 1) + 0.5
xtr, xte = (xtr - mean) / scale, (xte - mean) / scale
local ntrain = xtr.shape[1]
dist.print(string.format("digits_dp: %d ranks; %d training and %d test images; MLP 64-%d-10, SGD with momentum, lr %g, " ..
                         "global batch %d (%d per rank)", size, ntrain, xte.shape[1], opts.hidden, opts.lr, opts.batch,
                         opts.batch / size))

-- every rank draws the same initial values; sync makes sure of it (rank 1's, broadcast)
local params, logits = digits.mlp(opts.seed, opts.hidden)
params = dist.sync(params)
local function loss(p, x, c) return hl.nn.cross_entropy(logits(p, x), c) end

local opt = hl.optim.sgd(opts.lr, 0.9)
-- one compiled step: this rank's gradient, the allreduce (one bucket for the whole model), the update
local step = hl.jit(function(p, state, x, c)
  local l, g = dist.value_and_grad(loss)(p, x, c)
  local new_p, new_state = opt.update(g, state, p)
  return new_p, new_state, l
end, {name = "dp_step"})
local accuracy = hl.jit(function(p, x, c)
  return hl.mean(hl.eq(hl.argmax(logits(p, x), 2), c):astype("float32"))
end, {name = "accuracy"})

local steps = math.floor(ntrain / opts.batch)
local state = opt.init(params)
for epoch = 1, opts.epochs do
  local t0 = digits.now()
  -- the same global order on every rank (the key is shared); each rank takes its shard of a batch
  local order = hl.random.permutation(hl.random.fold_in(hl.random.key(opts.seed + 1), epoch), ntrain)
  local xs, cs = hl.take(xtr, order, 1), hl.take(ctr, order, 1)
  local total = 0
  for b = 1, steps do
    local lo, hi = (b - 1) * opts.batch + 1, b * opts.batch
    local shard = dist.shard({xs[{{lo, hi}}], cs[{{lo, hi}}]})
    local l
    params, state, l = step(params, state, shard[1], shard[2])
    total = total + l:item()
  end
  local dt = digits.now() - t0
  dist.print(string.format("epoch %3d  loss %.4f  test acc %.1f%%  %6.0f images/s", epoch, total / steps,
                           100 * accuracy(params, xte, cte):item(), steps * opts.batch / dt))
end

local acc = accuracy(params, xte, cte):item()
dist.print(string.format("test accuracy %.2f%% after %d epochs on %d ranks, %.1f s in all", 100 * acc, opts.epochs, size,
                         digits.now() - t_start))
-- the ranks' parameters agree to the bit: one allreduce gave every rank the same update
local spread = 0
for _, k in ipairs({"w1", "b1", "w2", "b2"}) do
  spread = math.max(spread, (dist.pmax(params[k]) - dist.pmin(params[k])):abs():max():item())
end
if spread ~= 0 then error(string.format("halua: digits_dp: the ranks' parameters differ by %g", spread), 0) end
-- the checkpoint: rank 1 writes it, every rank reads it back
dist.savez(opts.checkpoint, params)
local restored = dist.loadz(opts.checkpoint)
local acc2 = accuracy(restored, xte, cte):item()
dist.print(string.format("checkpoint %s: written by rank 1, reloaded on every rank, test accuracy %.2f%%", opts.checkpoint, 100 * acc2))
if acc2 ~= acc then error("halua: digits_dp: the reloaded checkpoint gives a different accuracy", 0) end
if acc < opts.min_accuracy then
  error(string.format("halua: digits_dp: test accuracy %.2f%% is below %.0f%%", 100 * acc, 100 * opts.min_accuracy), 0)
end
