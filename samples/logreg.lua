-- Multinomial logistic regression on the 8x8 digits, trained by full-batch gradient descent.
-- The whole training run -- every step's loss, gradient and update -- is one jitted function
-- around hl.fori_loop: the loop body compiles once and the loop runs inside the pipeline, never
-- returning to Lua between steps.
--
--   luajit samples/logreg.lua [--steps N] [--lr X] [--l2 X] [--min-accuracy P]
local hl = require "halua"
local here = debug.getinfo(1, "S").source:match("^@(.*/)") or "./"
package.path = here .. "?.lua;" .. package.path
local digits = require "digits"

local opts = digits.options("logreg", {steps = 300, lr = 0.5, l2 = 1e-3, min_accuracy = 0.94},
                           "[--steps N] [--lr X] [--l2 X] [--min-accuracy P]")

local t_start = digits.now()
local xtr, ytr, xte, yte = digits.load()
local ctr, cte = digits.classes(ytr), digits.classes(yte)
print(string.format("digits: %d training images, %d test; softmax regression, %d full-batch steps, lr %g, L2 %g",
                    xtr.shape[1], xte.shape[1], opts.steps, opts.lr, opts.l2))

local function loss(p, x, c)
  local logits = hl.matmul(x, p.w) + p.b
  return hl.nn.cross_entropy(logits, c) + opts.l2 * hl.sum(hl.square(p.w))
end

-- steps is static: the trip count is part of the compiled program
local train = hl.jit(function(p, x, c, steps)
  local opt = hl.optim.sgd(opts.lr, 0.9)
  local function step(_, carry)
    local g = hl.grad(loss)(carry.params, x, c)
    local params, state = opt.update(g, carry.state, carry.params)
    return {params = params, state = state}
  end
  local final = hl.fori_loop(1, steps, step, {params = p, state = opt.init(p)})
  return final.params, loss(final.params, x, c)
end, {static_argnums = {4}, name = "logreg train"})

local accuracy = hl.jit(function(p, x, c)
  return hl.mean(hl.eq(hl.argmax(hl.matmul(x, p.w) + p.b, 2), c):astype("float32"))
end)

local params = {w = hl.zeros({64, 10}), b = hl.zeros(10)}
-- in stages, so the run shows progress; each stage is the same compiled loop
local stages = 5
local per_stage = math.max(1, math.floor(opts.steps / stages))
local done = 0
while done < opts.steps do
  local n = math.min(per_stage, opts.steps - done)
  local t0 = digits.now()
  local l
  params, l = train(params, xtr, ctr, n)
  done = done + n
  print(string.format("step %4d  loss %.4f  train acc %.1f%%  test acc %.1f%%  (%d steps in %.2f s)", done, l:item(),
                      100 * accuracy(params, xtr, ctr):item(), 100 * accuracy(params, xte, cte):item(), n, digits.now() - t0))
end

local acc = accuracy(params, xte, cte):item()
print(string.format("test accuracy %.2f%%, %.1f s in all", 100 * acc, digits.now() - t_start))
if acc < opts.min_accuracy then
  error(string.format("halua: logreg: test accuracy %.2f%% is below %.0f%%", 100 * acc, 100 * opts.min_accuracy), 0)
end
