-- hl.random's samplers beyond the basic ones: choice, gamma, beta, dirichlet, truncated_normal,
-- poisson, categorical with a shape, permutation of arrays, rand/randn. With fixed keys: sample
-- means and variances within 5 sigma of the analytic values, Kolmogorov-Smirnov distances to the
-- CDF (computed by NumPy from closed forms or series) below the 0.1% critical value, frequencies
-- of discrete outcomes within 5 sigma, supports respected; the same bits eagerly and under jit;
-- vmap over keys; dtypes; errors.
local hl = require "halua"
local np = require "support.numpy"
local R = hl.random

local N = 20000
local function moments(x)
  x = x:astype("float64")
  local m = x:mean():item()
  return m, ((x - m) ^ 2):mean():item()
end
-- |got - want| within 5 standard errors
local function within(got, want, se, what)
  assert(math.abs(got - want) <= 5 * se + 1e-12,
         string.format("%s: %.6g, expected %.6g (5 sigma = %.3g)", what, got, want, 5 * se))
end
-- the mean and variance of n samples against a distribution's mean, variance and 4th central moment
local function check_moments(x, mean, var, mu4, what)
  local n = x.size
  local m, v = moments(x)
  within(m, mean, math.sqrt(var / n), what .. " mean")
  within(v, var, math.sqrt((mu4 - var * var) / n), what .. " variance")
end
-- equal arrays: integers exactly; floats to a few units in the last place (the same bits, but a
-- jit pipeline may round the math after them differently from the eager kernels)
local function same(a, b, what)
  local fa, fb = hl.reshape(a, {a.size}):totable(), hl.reshape(b, {b.size}):totable()
  assert(#fa == #fb and a.dtype == b.dtype, what .. ": shapes or dtypes differ")
  local tol = a.dtype == "float32" and 1e-6 or a.dtype == "float64" and 1e-14 or 0
  for i = 1, #fa do
    assert(math.abs(fa[i] - fb[i]) <= tol * math.abs(fb[i]) or (fa[i] ~= fa[i] and fb[i] ~= fb[i]),
           string.format("%s: element %d: %.17g vs %.17g", what, i, fa[i], fb[i]))
  end
end

-- P(a, x), the regularised lower incomplete gamma function, by its series (in logs), in NumPy
local function gamma_cdf(a)
  return string.format("np.array([sum(math.exp((%.17g + k) * math.log(max(x, 1e-300)) - x - math.lgamma(%.17g + k + 1)) for k in range(400)) for x in a])", a, a)
end
local PHI = "(0.5 * (1 + np.vectorize(math.erf)(%s / math.sqrt(2))))"

describe("random samplers: Kolmogorov-Smirnov distances to the CDF", function()
  local batch, cases = np.batch(), {}
  local function ks(name, x, cdf)
    x = hl.sort(hl.reshape(x, {x.size}):astype("float64"))
    local expr = string.format("(lambda F, n: np.maximum(np.arange(1, n + 1) / n - F, F - np.arange(0, n) / n).max())(%s, len(a))", cdf)
    cases[#cases + 1] = {name = name, n = x.size, want = batch:add(expr, {x})}
  end
  local k = R.key(2026)
  local n = 4000
  for i, a in ipairs {0.1, 0.5, 1, 2.5, 7, 40} do
    ks(string.format("gamma a = %g (float64)", a), R.gamma(R.fold_in(k, i), a, {n}, "float64"), gamma_cdf(a))
  end
  ks("gamma a = 3 (float32)", R.gamma(R.fold_in(k, 10), 3, {n}), gamma_cdf(3))
  ks("gamma with an array of a: all 0.5", R.gamma(R.fold_in(k, 11), hl.full({n}, 0.5)), gamma_cdf(0.5))
  ks("beta(2, 2): 3x^2 - 2x^3", R.beta(R.fold_in(k, 20), 2, 2, {n}, "float64"), "3 * a**2 - 2 * a**3")
  ks("beta(0.5, 0.5): the arcsine law", R.beta(R.fold_in(k, 21), 0.5, 0.5, {n}, "float64"), "2 / np.pi * np.arcsin(np.sqrt(a))")
  ks("beta(1, 3): 1 - (1 - x)^3", R.beta(R.fold_in(k, 22), 1, 3, {n}), "1 - (1 - a)**3")
  ks("dirichlet({1, 1, 1}) marginal: beta(1, 2)", R.dirichlet(R.fold_in(k, 30), hl.array({1, 1, 1}), {n})[{{}, 2}], "1 - (1 - a)**2")
  local tn = {{-1, 2}, {-math.huge, 0.5}, {1, math.huge}, {3, 4}, {-6, -5}, {-0.2, 0.1}}
  for i, b in ipairs(tn) do
    local lo, hi = b[1], b[2]
    local Fl = lo == -math.huge and "0" or string.format(PHI, string.format("%.17g", lo))
    local Fh = hi == math.huge and "1" or string.format(PHI, string.format("%.17g", hi))
    ks(string.format("truncated_normal on [%g, %g]", lo, hi), R.truncated_normal(R.fold_in(k, 40 + i), lo, hi, {n}, "float64"),
       string.format("(%s - %s) / (%s - %s)", string.format(PHI, "a"), Fl, Fh, Fl))
  end
  -- far in the tails, where 1 + erf has no digits left: the CDF by erfc
  local Q = "(0.5 * np.vectorize(math.erfc)((%s) / math.sqrt(2)))"
  ks("truncated_normal on [8, 9]", R.truncated_normal(R.fold_in(k, 48), 8, 9, {n}, "float64"),
     string.format("(%s - %s) / (%s - %s)", string.format(Q, "8"), string.format(Q, "a"), string.format(Q, "8"), string.format(Q, "9")))
  ks("truncated_normal on [-30, -29]", R.truncated_normal(R.fold_in(k, 49), -30, -29, {n}, "float64"),
     string.format("(%s - %s) / (%s - %s)", string.format(Q, "-a"), string.format(Q, "30"), string.format(Q, "29"), string.format(Q, "30")))
  ks("randn is the normal", R.randn(R.fold_in(k, 50), {n}, "float64"), string.format(PHI, "a"))
  ks("rand is the uniform", R.rand(R.fold_in(k, 51), {n}, "float64"), "a")
  setup(function() batch:run() end)
  for _, c in ipairs(cases) do
    it(c.name, function()
      local r = c.want()
      assert(not r.error, tostring(r.error))
      local D, crit = r.values[1], 1.95 / math.sqrt(c.n)
      assert(D < crit, string.format("%s: KS distance %.4f above the 0.1%% critical value %.4f", c.name, D, crit))
    end)
  end
end)

describe("random samplers: moments within 5 sigma", function()
  local k = R.key(7)
  it("gamma: mean a, variance a, several a and dtypes", function()
    for i, a in ipairs {0.05, 0.3, 1, 4, 100} do
      for _, dt in ipairs {"float32", "float64"} do
        local x = R.gamma(R.fold_in(k, i), a, {N}, dt)
        assert.are.equal(dt, x.dtype)
        assert.is_true(x:min():item() >= 0)
        check_moments(x, a, a, 3 * a * a + 6 * a, string.format("gamma(%g) %s", a, dt))
      end
    end
    local h = R.gamma(k, 2, {3, 4}, "float16")
    assert.are.same({"float16", 3, 4}, {h.dtype, h.shape[1], h.shape[2]})
  end)
  it("gamma broadcasts an array of a to the shape", function()
    local a = hl.array({0.5, 2, 9})
    local x = R.gamma(k, a, {N, 3}, "float64")
    for j, aj in ipairs {0.5, 2, 9} do check_moments(x[{{}, j}], aj, aj, 3 * aj * aj + 6 * aj, "column " .. j) end
  end)
  it("beta: mean a / (a + b), variance ab / ((a + b)^2 (a + b + 1))", function()
    for i, ab in ipairs {{2, 5}, {0.2, 0.3}, {30, 10}, {0.01, 0.01}} do
      local a, b = ab[1], ab[2]
      local x = R.beta(R.fold_in(k, 10 + i), a, b, {N}, "float64")
      assert.is_true(x:min():item() >= 0 and x:max():item() <= 1)
      local m, v = a / (a + b), a * b / ((a + b) ^ 2 * (a + b + 1))
      within(moments(x), m, math.sqrt(v / N), string.format("beta(%g, %g) mean", a, b))
      local _, sv = moments(x)
      within(sv, v, 0.05 * v + 1e-9, string.format("beta(%g, %g) variance", a, b))   -- 5% of v: more than 5 sigma at N = 20000
    end
  end)
  it("dirichlet: rows sum to 1, means alpha / sum(alpha)", function()
    local alpha = hl.array({0.5, 1, 3, 6}, "float64")
    local x = R.dirichlet(k, alpha, {N}, "float64")
    assert.are.same({N, 4}, x.shape)
    local s = x:sum(2)
    assert.is_true(math.abs(s:min():item() - 1) < 1e-12 and math.abs(s:max():item() - 1) < 1e-12)
    assert.is_true(x:min():item() >= 0)
    for j, aj in ipairs {0.5, 1, 3, 6} do
      local m = aj / 10.5
      within(x[{{}, j}]:mean():item(), m, math.sqrt(m * (1 - m) / 11.5 / N), "component " .. j)
    end
    -- a batch of concentrations: shape defaults to alpha's
    local b = R.dirichlet(k, hl.array({{1, 1}, {5, 1}, {0.1, 0.1}}))
    assert.are.same({3, 2}, b.shape)
    assert.are.equal("float32", b.dtype)
    local small = R.dirichlet(k, hl.array({0.01, 0.01, 0.01}), {100}, "float64")
    assert.is_true(math.abs(small:sum(2):min():item() - 1) < 1e-12, "tiny concentrations still sum to 1")
  end)
  it("truncated_normal stays in its bounds, with the truncated mean", function()
    for i, b in ipairs {{-1, 2}, {2, 3}, {-10, -8}, {0, 1e-3}, {5, 100}} do
      local lo, hi = b[1], b[2]
      local x = R.truncated_normal(R.fold_in(k, 30 + i), lo, hi, {N}, "float64")
      assert.is_true(x:min():item() >= lo and x:max():item() <= hi, string.format("[%g, %g]: out of bounds", lo, hi))
    end
    local x = R.truncated_normal(k, 0, math.huge, {N})
    assert.are.equal("float32", x.dtype)
    -- the half-normal: mean sqrt(2 / pi), variance 1 - 2 / pi
    within(moments(x), math.sqrt(2 / math.pi), math.sqrt((1 - 2 / math.pi) / N), "half-normal mean")
    local lo, hi = hl.array({-1, 0, 2}), hl.array({1, 3, 2.5})
    local y = R.truncated_normal(k, lo, hi, {N, 3})
    assert.is_true(hl.all(hl.logical_and(hl.ge(y, lo), hl.le(y, hi))):item())
  end)
  it("poisson: mean and variance lam, small and large, and the frequencies of each count", function()
    for i, lam in ipairs {0.01, 0.7, 4, 9.99, 10, 25, 300, 1e5} do
      local x = R.poisson(R.fold_in(k, 40 + i), lam, {N})
      assert.are.equal("int32", x.dtype)
      assert.is_true(x:min():item() >= 0)
      check_moments(x, lam, lam, lam * (1 + 3 * lam), string.format("poisson(%g)", lam))
    end
    for _, lam in ipairs {3, 15} do
      local x = R.poisson(R.fold_in(k, lam), lam, {N}, "int64")
      local counts = x:totable()
      local freq = {}
      for _, c in ipairs(counts) do freq[c] = (freq[c] or 0) + 1 end
      local logp = -lam
      for c = 0, 3 * lam do
        local p = math.exp(logp)
        local sd = math.sqrt(N * p * (1 - p))
        assert(math.abs((freq[c] or 0) - N * p) <= 5 * sd + 1,
               string.format("poisson(%g): %d counts of %d, expected %.1f", lam, freq[c] or 0, c, N * p))
        logp = logp + math.log(lam) - math.log(c + 1)
      end
    end
    assert.are.same({0, 0, 0}, R.poisson(k, 0, {3}):totable())
    local mixed = R.poisson(k, hl.array({0.5, 50}), {N, 2}, "float64")
    within(mixed[{{}, 1}]:mean():item(), 0.5, math.sqrt(0.5 / N), "column of lam 0.5")
    within(mixed[{{}, 2}]:mean():item(), 50, math.sqrt(50 / N), "column of lam 50")
  end)
end)

describe("random.choice, categorical with a shape, permutation of arrays", function()
  local k = R.key(11)
  it("choice from 1..n with replacement: 1-based, uniform frequencies", function()
    local x = R.choice(k, 5, {N})
    assert.are.equal("int64", x.dtype)
    assert.are.equal(1, x:min():item())
    assert.are.equal(5, x:max():item())
    for v = 1, 5 do within(hl.eq(x, v):astype("float64"):mean():item(), 0.2, math.sqrt(0.16 / N), "frequency of " .. v) end
    assert.are.same({}, R.choice(k, 3).shape)
  end)
  it("choice with p: frequencies follow p (unnormalised too)", function()
    local p = {0.1, 0.6, 0, 0.3}
    local x = R.choice(k, 4, {N, 2}, {p = hl.array(p) * 5})
    assert.are.same({N, 2}, x.shape)
    for v = 1, 4 do within(hl.eq(x, v):astype("float64"):mean():item(), p[v], math.sqrt(p[v] * (1 - p[v]) / (2 * N)), "frequency of " .. v) end
  end)
  it("choice without replacement gives distinct values; all of them is a permutation", function()
    for i, m in ipairs {1, 7, 30} do
      local x = R.choice(R.fold_in(k, i), 30, {m}, {replace = false}):totable()
      local seen = {}
      for _, v in ipairs(x) do
        assert.is_nil(seen[v], "repeated " .. v)
        assert.is_true(v >= 1 and v <= 30)
        seen[v] = true
      end
    end
    local w = R.choice(k, 6, {2, 3}, {replace = false, p = hl.array({1, 2, 3, 4, 5, 6})})
    local s = hl.sort(hl.reshape(w, {6})):totable()
    assert.are.same({1, 2, 3, 4, 5, 6}, s)
    -- without replacement and with p: the first pick follows p
    local first = hl.vmap(function(kk) return R.choice(kk, 3, {2}, {replace = false, p = hl.array({0.7, 0.2, 0.1})})[1] end)(R.split(k, 4000))
    within(hl.eq(first, 1):astype("float64"):mean():item(), 0.7, math.sqrt(0.21 / 4000), "first pick of 1")
  end)
  it("choice from an array takes its entries along axis", function()
    local a = hl.arange(12):reshape({4, 3})
    local r = R.choice(k, a, {5})
    assert.are.same({5, 3}, r.shape)
    for i = 1, 5 do
      local row = r[i]:totable()
      assert.are.equal(0, row[1] % 3)
      assert.are.same({row[1], row[1] + 1, row[1] + 2}, row)
    end
    local c = R.choice(k, a, {1, 3}, {axis = 2, replace = false})
    assert.are.same({4, 1, 3}, c.shape)
    assert.are.same({0, 1, 2}, hl.sort(c[1][1]):totable())
    local d = R.choice(k, hl.array({10, 20, 30}), {N}, {p = {0, 1, 0}})
    assert.are.equal(20, d:min():item())
    assert.are.equal(20, d:max():item())
  end)
  it("categorical draws shape samples; its logits broadcast along the batch", function()
    local logits = hl.log(hl.array({{0.2, 0.8}, {0.9, 0.1}}))
    local x = R.categorical(k, logits, -1, {N, 2})
    assert.are.same({N, 2}, x.shape)
    within(hl.eq(x[{{}, 1}], 2):astype("float64"):mean():item(), 0.8, math.sqrt(0.16 / N), "row 1")
    within(hl.eq(x[{{}, 2}], 1):astype("float64"):mean():item(), 0.9, math.sqrt(0.09 / N), "row 2")
    -- along axis 1: the categories are rows
    local y = R.categorical(k, logits, 1, {N, 2})
    within(hl.eq(y[{{}, 1}], 2):astype("float64"):mean():item(), 0.9 / 1.1, math.sqrt(0.149 / N), "column 1")
    -- without shape: as before, logits's shape without the axis
    assert.are.same({2}, R.categorical(k, logits).shape)
    same(R.categorical(k, logits), R.categorical(k, logits, -1, {2}), "the same bits with shape = the batch shape")
  end)
  it("permutation of 200000 (a sort of the words, not n x n comparisons) holds every number once", function()
    local p = R.permutation(k, 200000)
    assert.is_true(hl.all(hl.eq(hl.sort(p), hl.arange(1, 200001, "int64"))):item())
    -- the order of the words, ties by position: the rank of each word among all of them
    local w = R.bits(k, {50})
    local q = R.permutation(k, 50):totable()
    local wt = w:totable()
    for r = 2, 50 do
      local a, b = wt[q[r - 1]], wt[q[r]]
      assert.is_true(a < b or (a == b and q[r - 1] < q[r]))
    end
  end)
  it("permutation of an array shuffles along an axis", function()
    local x = hl.arange(20):reshape({5, 4})
    local p = R.permutation(k, x)
    assert.are.same({5, 4}, p.shape)
    local firsts = {}
    for i = 1, 5 do firsts[i] = p[{i, 1}]:item() end
    table.sort(firsts)
    assert.are.same({0, 4, 8, 12, 16}, firsts)
    same(p, hl.take(x, R.permutation(k, 5), 1), "the rows in permutation(key, 5)'s order")
    local q = R.permutation(k, x, 2)
    same(q, hl.take(x, R.permutation(k, 4), 2), "columns")
  end)
end)

describe("random samplers: jit, vmap and keys", function()
  local k = R.key(99)
  local samplers = {
    gamma = function(kk) return R.gamma(kk, hl.array({0.3, 1, 5}), {4, 3}) end,
    beta = function(kk) return R.beta(kk, 0.5, 2, {5}, "float64") end,
    dirichlet = function(kk) return R.dirichlet(kk, hl.array({1, 2, 3}), {2}) end,
    truncated_normal = function(kk) return R.truncated_normal(kk, -1, 1.5, {6}) end,
    poisson = function(kk) return R.poisson(kk, hl.array({0.5, 8, 40}), {2, 3}) end,
    choice = function(kk) return R.choice(kk, 10, {4}, {replace = false}) end,
    choice_p = function(kk) return R.choice(kk, 3, {4}, {p = hl.array({0.2, 0.3, 0.5})}) end,
    categorical = function(kk) return R.categorical(kk, hl.array({0, 1, 2}), -1, {5}) end,
    permutation = function(kk) return R.permutation(kk, hl.arange(6)) end,
  }
  for name, f in pairs(samplers) do
    it(name .. ": the same values eagerly and under jit, and per key under vmap", function()
      same(hl.jit(f)(k), f(k), name .. " jit")
      local keys = R.split(k, 3)
      local batched = hl.vmap(f)(keys)
      for i = 1, 3 do same(batched[i], f(keys[i]), name .. " vmap " .. i) end
      local other = f(R.fold_in(k, 1))
      local differs = false
      local a, b = hl.reshape(f(k), {other.size}):totable(), hl.reshape(other, {other.size}):totable()
      for i = 1, #a do differs = differs or a[i] ~= b[i] end
      assert.is_true(differs, name .. ": another key gives other values")
    end)
  end
  it("rand and randn are uniform and normal", function()
    assert.are.equal(R.uniform, R.rand)
    assert.are.equal(R.normal, R.randn)
  end)
end)

describe("random samplers under derivatives", function()
  local k = R.key(5)
  it("truncated_normal is differentiable in its bounds (the inverse CDF is a reparameterisation)", function()
    local f = function(b) return R.truncated_normal(k, b[1], b[2], {6}, "float64"):sum() end
    local b = hl.array({-0.7, 1.2}, "float64")
    local g = hl.grad(f)(b)
    local num = require("support.diff_check").numeric(f, b, 1e-6)
    require("support.diff_check").close(g, num, 1e-5, "d/d bounds")
  end)
  it("gamma, beta and dirichlet give no derivative through a shape parameter under stop_gradient", function()
    -- (their implicit derivatives in the shape parameters: random_grad_spec.lua)
    local g = hl.grad(function(a) return (R.gamma(k, hl.stop_gradient(a), {3}) * a):sum() end)(hl.array(2.0))
    assert.are.equal(R.gamma(k, 2.0, {3}):sum():item(), g:item())
    g = hl.grad(function(a) return R.beta(k, hl.stop_gradient(a), 2, {3}):sum() end)(hl.array(2.0))
    assert.are.equal(0, g:item())
  end)
end)

describe("random sampler errors", function()
  local k = R.key(1)
  local function err(f, ...)
    local ok, e = pcall(f, ...)
    assert.is_false(ok)
    return e
  end
  it("name the function and what to pass", function()
    assert.matches("halua: random.gamma: a must be positive, got -1", err(R.gamma, k, -1, {2}), 1, true)
    assert.matches("halua: random.gamma: expected a key", err(R.gamma, 3, 1, {2}), 1, true)
    assert.matches("halua: random.gamma: dtype must be float32, float64, float16 or bfloat16, got int32", err(R.gamma, k, 1, {2}, "int32"), 1, true)
    assert.matches("halua: random.gamma: a of shape [3] does not broadcast to the shape [2]", err(R.gamma, k, hl.ones(3), {2}), 1, true)
    assert.matches("halua: random.beta: b must be positive, got 0", err(R.beta, k, 1, 0, {2}), 1, true)
    assert.matches("halua: random.dirichlet: alpha must be an array with a last axis of concentrations, got float32[]",
                   err(R.dirichlet, k, hl.array(1)), 1, true)
    assert.matches("halua: random.truncated_normal: lower (2) must be less than upper (1)", err(R.truncated_normal, k, 2, 1, {3}), 1, true)
    assert.matches("halua: random.poisson: lam must be a finite number >= 0, got -2", err(R.poisson, k, -2, {3}), 1, true)
    assert.matches("halua: random.poisson: dtype must be int32, int64, float32 or float64, got bool", err(R.poisson, k, 1, {3}, "bool"), 1, true)
    assert.matches("halua: random.choice: cannot take 5 samples without replacement from 4 choices", err(R.choice, k, 4, {5}, {replace = false}), 1, true)
    assert.matches("halua: random.choice: unknown option 'replacement' (the options are replace, p, axis)",
                   err(R.choice, k, 4, {2}, {replacement = false}), 1, true)
    assert.matches("halua: random.choice: p must be a 1-d array of 4 probabilities (one per choice), got float32[3]",
                   err(R.choice, k, 4, {2}, {p = hl.ones(3)}), 1, true)
    assert.matches("halua: random.choice: a must be a positive integer (choose from 1..a) or an array, got 0", err(R.choice, k, 0, {2}), 1, true)
    assert.matches("halua: random.choice: axis 3 is out of range for a of shape [2,2]", err(R.choice, k, hl.ones({2, 2}), {1}, {axis = 3}), 1, true)
    assert.matches("halua: random.categorical: the batch shape of logits [2,3] (without axis 2) does not broadcast to shape [4]",
                   err(R.categorical, k, hl.ones({2, 3}), -1, {4}), 1, true)
    assert.matches("halua: random.permutation: axis 2 is out of range for an array of shape [3]", err(R.permutation, k, hl.ones(3), 2), 1, true)
  end)
end)
describe("random.permutation's arguments", function()
  it("permutation(key, n) with a third argument is an error, not ignored", function()
    local ok, err = pcall(hl.random.permutation, hl.random.key(0), 5, {independent = true})
    assert.is_false(ok)
    assert.truthy(err:find("^halua: random.permutation: permutation%(key, n%) takes no third argument"), err)
    assert.are.same(5, #hl.random.permutation(hl.random.key(0), 5):totable())
  end)
end)
