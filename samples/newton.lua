-- Newton's method with hl.hessian and hl.linalg.solve: each step solves H d = g for the step d,
-- with exact second derivatives from autodiff (forward over reverse mode).
--   1. Rosenbrock's banana function from the classic start (-1.2, 1): a damped Newton iteration
--      (step halving until the value falls) reaches the minimum (1, 1) in a couple dozen steps,
--      where gradient descent needs thousands.
--   2. L2-regularised logistic regression on the digits ("is it a 3?"): the log-likelihood is
--      smooth and convex, and Newton's method (iteratively reweighted least squares) converges in
--      a handful of steps.
--
--   luajit samples/newton.lua [--steps N] [--min-accuracy P]
local hl = require "halua"
local here = debug.getinfo(1, "S").source:match("^@(.*/)") or "./"
package.path = here .. "?.lua;" .. package.path
local digits = require "digits"

local opts = {steps = 10, min_accuracy = 0.97}
do
  local i = 1
  while i <= #arg do
    local key = (arg[i]:match("^%-%-([%w-]+)$") or ""):gsub("-", "_")
    if opts[key] == nil or not tonumber(arg[i + 1]) then
      io.stderr:write("usage: luajit samples/newton.lua [--steps N] [--min-accuracy P]\n")
      os.exit(2)
    end
    opts[key] = tonumber(arg[i + 1])
    i = i + 2
  end
end
local t_start = digits.now()

---------------------------------------------------------------- 1. Rosenbrock

local function rosenbrock(p)
  local x, y = p[1], p[2]
  return (1 - x) ^ 2 + 100 * (y - x * x) ^ 2
end
local value_and_grad = hl.jit(hl.value_and_grad(rosenbrock))
local hessian = hl.jit(hl.hessian(rosenbrock))
local f = hl.jit(rosenbrock)

local p = hl.array({-1.2, 1}, "float64")
print(string.format("Rosenbrock from (%.1f, %.1f): f = %.4g", -1.2, 1, f(p):item()))
local k = 0
while true do
  local v, g = value_and_grad(p)
  if hl.max(hl.abs(g)):item() < 1e-10 or k >= 100 then break end
  local d = hl.linalg.solve(hessian(p), g)
  -- halve the step until the value falls (Newton's step can overshoot far from the minimum)
  local t = 1
  while f(p - t * d):item() > v:item() and t > 1e-8 do t = t / 2 end
  p = p - t * d
  k = k + 1
  if k <= 3 or k % 5 == 0 then
    print(string.format("  step %2d  f = %.6e  at (%.6f, %.6f)  step length %g", k, f(p):item(), p[1]:item(), p[2]:item(), t))
  end
end
local x, y = p[1]:item(), p[2]:item()
print(string.format("  minimum (%.9f, %.9f) after %d Newton steps", x, y, k))
if math.abs(x - 1) > 1e-6 or math.abs(y - 1) > 1e-6 then error("halua: newton: Rosenbrock did not converge to (1, 1)", 0) end

---------------------------------------------------------------- 2. logistic regression

local xtr, ytr, xte, yte = digits.load()
local function is_three(labels)
  local t = {}
  for i, l in ipairs(labels) do t[i] = l == 3 and 1 or 0 end
  return hl.array(t, "float64")
end
-- float64 features with a constant column for the bias
local function design(x) return hl.concatenate({x:astype("float64"), hl.ones({x.shape[1], 1}, "float64")}, 2) end
local Xtr, Xte, ttr, tte = design(xtr), design(xte), is_three(ytr), is_three(yte)
local lambda = 1e-4

-- the negative log-likelihood, log(1 + exp(z)) - t z, written stably with softplus
local function nll(w, X, t)
  local z = hl.matmul(X, w)
  return hl.mean(hl.nn.softplus(z) - t * z) + 0.5 * lambda * hl.sum(w * w)
end
local newton_step = hl.jit(function(w, X, t)
  local l, g = hl.value_and_grad(nll)(w, X, t)
  local H = hl.hessian(nll)(w, X, t)
  return w - hl.linalg.solve(H, g), l
end)
local accuracy = hl.jit(function(w, X, t)
  return hl.mean(hl.eq(hl.gt(hl.matmul(X, w), 0), hl.gt(t, 0.5)):astype("float64"))
end)

print(string.format("logistic regression, is it a 3? %d training images, %d weights, L2 %g", Xtr.shape[1], Xtr.shape[2], lambda))
local w = hl.zeros(Xtr.shape[2], "float64")
for step = 1, opts.steps do
  local t0 = digits.now()
  local l
  w, l = newton_step(w, Xtr, ttr)
  print(string.format("  step %d  loss %.8f  train acc %.2f%%  (%.2f s)", step, l:item(), 100 * accuracy(w, Xtr, ttr):item(),
                      digits.now() - t0))
end
local acc = accuracy(w, Xte, tte):item()
print(string.format("test accuracy %.2f%%, %.1f s in all", 100 * acc, digits.now() - t_start))
if acc < opts.min_accuracy then
  error(string.format("halua: newton: test accuracy %.2f%% is below %.0f%%", 100 * acc, 100 * opts.min_accuracy), 0)
end
