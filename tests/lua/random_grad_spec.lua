-- The implicit derivatives of hl.random.gamma, beta and dirichlet in their shape parameters
-- (random_gamma_grad.lua). Per sample against -(dP/da) / pdf(x) computed by NumPy (P, the
-- regularised lower incomplete gamma function, by its series with math.lgamma, differentiated by
-- central differences in a); in expectation against d E[x] / da by Monte Carlo; the same values
-- under jit, vmap and jvp as under grad.
local hl = require "halua"
local np = require "support.numpy"
local R = hl.random

-- dx/da at the pairs (a, x) of a and b, in float64
local REF = "(lambda P: np.array([-(P(al * (1 + 1e-5), x) - P(al * (1 - 1e-5), x)) / (2e-5 * al)" ..
  " / math.exp((al - 1) * math.log(x) - x - math.lgamma(al)) for al, x in zip(a, b)]))" ..
  "(lambda al, x: math.fsum(math.exp((al + k) * math.log(x) - x - math.lgamma(al + k + 1)) for k in range(2500)))"

local function close(got, want, rtol, what)
  for i = 1, #want do
    assert(math.abs(got[i] - want[i]) <= rtol * math.abs(want[i]),
           string.format("%s: element %d: %.10g, expected %.10g", what, i, got[i], want[i]))
  end
end

describe("random.gamma's derivative in a", function()
  local batch, cases = np.batch(), {}
  local k = R.key(31)
  for i, a in ipairs {0.3, 1, 5, 50, 2000} do
    for _, dt in ipairs {"float64", "float32"} do
      local n = 6
      local av = hl.full({n}, a, dt)
      local f = function(al) return R.gamma(R.fold_in(k, i), al, {n}, dt) end
      local x, t = hl.jvp(f, {av}, {hl.ones_like(av)})
      local g = hl.grad(function(al) return f(al):sum() end)(av)
      cases[#cases + 1] = {what = string.format("a = %g, %s", a, dt), t = t, g = g, x = x,
                           rtol = (dt == "float32" and 1e-4 or 2e-6) * (a > 900 and 10 or 1),
                           want = batch:add(REF, {av:astype("float64"), x:astype("float64")})}
    end
  end
  batch:run()

  it("is -(dP/da) / pdf(x) at every sample: a = 0.3, 1, 5, 50, 2000, float32 and float64, by grad and jvp", function()
    for _, c in ipairs(cases) do
      local want = c.want().values
      assert.are.equal(c.x.dtype, c.g.dtype)
      close(c.t:totable(), want, c.rtol, c.what .. " (jvp)")
      close(c.g:totable(), want, c.rtol, c.what .. " (grad)")
    end
  end)

  it("keeps the samples' values", function()
    local k = R.key(4)
    local x = R.gamma(k, 2.5, {5}, "float64")
    local v = hl.value_and_grad(function(a) return R.gamma(k, a, {5}, "float64"):sum() end)(hl.array(2.5, "float64"))
    assert.are.equal(x:sum():item(), v:item())
  end)

  it("has mean d E[x] / da = 1 (scale 1), by Monte Carlo", function()
    local k = R.key(5)
    for _, a in ipairs {0.3, 1, 5, 50} do
      local n = 10000
      local _, t = hl.jvp(function(al) return R.gamma(k, al, {n}, "float64") end, {hl.array(a, "float64")}, {hl.array(1, "float64")})
      -- dx/da has variance below 1 / a + 1 (it is near x / a for a >= 1, near -x log x / a below)
      local m = t:mean():item()
      local sd = math.sqrt((t:var():item()) / n)
      assert(math.abs(m - 1) < 5 * sd, string.format("a = %g: mean %.5f, 5 sigma %.5f", a, m, 5 * sd))
    end
  end)

  it("is the same under jit, and under vmap over a", function()
    local k = R.key(6)
    local f = function(a) return (R.gamma(k, a, {3}) ^ 2):sum() end
    local a = hl.array({0.7, 3, 20})
    local eager = {}
    for i = 1, 3 do eager[i] = hl.grad(f)(a[i]):item() end
    local jitted = hl.jit(hl.grad(f))
    local mapped = hl.vmap(hl.grad(f))(a):totable()
    local jmapped = hl.jit(hl.vmap(hl.grad(f)))(a):totable()
    for i = 1, 3 do
      local j = jitted(a[i]):item()
      assert(math.abs(j - eager[i]) <= 1e-5 * math.abs(eager[i]), "jit " .. i)
      assert(math.abs(mapped[i] - eager[i]) <= 1e-5 * math.abs(eager[i]), "vmap " .. i)
      assert(math.abs(jmapped[i] - eager[i]) <= 1e-5 * math.abs(eager[i]), "jit of vmap " .. i)
    end
  end)

  it("flows to an array of a broadcast to the shape", function()
    local k = R.key(8)
    local a = hl.array({1, 4}, "float64")
    local g = hl.grad(function(al) return R.gamma(k, al, {3, 2}, "float64"):sum() end)(a)
    local x, t = hl.jvp(function(al) return R.gamma(k, al, {3, 2}, "float64") end, {a}, {hl.ones_like(a)})
    assert.are.same({2}, g.shape)
    local s = t:sum(1):totable()
    close(g:totable(), s, 1e-12, "broadcast")
    assert.are.same({3, 2}, x.shape)
  end)
end)

describe("random.gamma's second derivative in a", function()
  it("is an error naming it, in reverse and forward mode, for gamma and what is built on it (not a silent zero)", function()
    local key = hl.random.key(3)
    local want = "halua: random.gamma: no second derivative with respect to the shape parameter a"
    local f = function(a) return hl.sum(hl.random.gamma(key, a, {5})) end
    for _, h in ipairs({hl.grad(hl.grad(f)), hl.jacfwd(hl.grad(f)), hl.jit(hl.grad(hl.grad(f)))}) do
      local ok, err = pcall(h, hl.array(2.0))
      assert.is_false(ok)
      assert.truthy(tostring(err):find(want, 1, true), tostring(err))
    end
    local b = function(a) return hl.sum(hl.random.beta(key, a, 2.0, {4})) end
    local ok, err = pcall(hl.grad(hl.grad(b)), hl.array(1.5))
    assert.is_false(ok)
    assert.truthy(tostring(err):find(want, 1, true), tostring(err))
    -- a second derivative in another variable, with a held constant, is fine
    local g = function(s) return hl.sum(hl.random.gamma(key, 2.0, {5}) * s * s) end
    assert.is_true(math.abs(hl.grad(hl.grad(g))(hl.array(1.0)):item() - 2 * hl.sum(hl.random.gamma(key, 2.0, {5})):item()) < 1e-4)
  end)
end)

describe("random.beta's and random.dirichlet's derivatives", function()
  it("beta: d E[x] / da = b / (a + b)^2 and d E[x] / db = -a / (a + b)^2, by Monte Carlo", function()
    local k = R.key(9)
    local n = 10000
    local a, b = 2, 3
    local f = function(p, q) return R.beta(k, p, q, {n}, "float64") end
    local pa, pb = hl.array(a, "float64"), hl.array(b, "float64")
    local _, ta = hl.jvp(function(p) return f(p, pb) end, {pa}, {hl.array(1, "float64")})
    local _, tb = hl.jvp(function(q) return f(pa, q) end, {pb}, {hl.array(1, "float64")})
    for _, c in ipairs {{ta, b / (a + b) ^ 2, "a"}, {tb, -a / (a + b) ^ 2, "b"}} do
      local m, sd = c[1]:mean():item(), math.sqrt(c[1]:var():item() / n)
      assert(math.abs(m - c[2]) < 5 * sd, string.format("d/d%s: %.5f, expected %.5f (5 sigma %.5f)", c[3], m, c[2], 5 * sd))
    end
    local gs = hl.grad(function(p, q) return f(p, q):mean() end, {1, 2})(pa, pb)
    local ga, gb = gs[1], gs[2]
    assert(math.abs(ga:item() - ta:mean():item()) < 1e-12)
    assert(math.abs(gb:item() - tb:mean():item()) < 1e-12)
  end)

  it("dirichlet: d E[x_i] / d alpha_j = (delta_ij S - alpha_i) / S^2, by Monte Carlo, also under jit", function()
    local k = R.key(10)
    local n = 10000
    local alpha = hl.array({1, 2, 3}, "float64")
    local S = 6
    for _, T in ipairs {function(f) return f end, hl.jit} do
      local g = T(hl.grad(function(al) return R.dirichlet(k, al, {n}, "float64")[{{}, 1}]:mean() end))(alpha):totable()
      local want = {(S - 1) / S ^ 2, -1 / S ^ 2, -1 / S ^ 2}
      for j = 1, 3 do
        assert(math.abs(g[j] - want[j]) < 0.01, string.format("d E[x_1] / d alpha_%d: %.5f, expected %.5f", j, g[j], want[j]))
      end
    end
  end)
end)
