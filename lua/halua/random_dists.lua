-- The samplers of hl.random built on uniform and normal words (random.lua): choice, gamma, beta,
-- dirichlet, truncated_normal, poisson, and the Torch-style names rand and randn. Every sampler is
-- vectorised, with no host loop, so it runs the same eagerly, under jit and under vmap over keys.
--   Rejection samplers (gamma's Marsaglia-Tsang, poisson's transformed rejection) draw a fixed
--   number of candidates per sample (ROUNDS) and keep the first accepted one, chosen with argmax
--   over the rounds. Each round accepts with probability above 0.95 (gamma) or 0.87 (poisson), so
--   all ROUNDS fail with probability below 1e-20 (gamma) and 1e-14 (poisson) per sample; only then
--   is a fixed value used (the mode), so the samples are exact in distribution to that level.
return function(hl, core, R, priv)
  local util = require "halua.util"
  local fail, shape_str = util.fail, util.shape_str
  local is_array = core.is_array
  local shape_of, check_float, on = priv.shape_of, priv.check_float, priv.on

  local ROUNDS = 16

  local cat = util.concat

  -- a parameter (a number or an array) as an array of dtype broadcast to shape s; numbers are
  -- checked with ok(v) (the rule's words in what)
  local function param(op, name, v, s, dtype, k, ok, what)
    if type(v) == "number" then
      if ok and not ok(v) then fail("random.%s: %s must be %s, got %s", op, name, what, tostring(v)) end
      return on(k, hl.full(s, v, dtype))
    end
    if type(v) == "table" and not is_array(v) then v = hl.array(v, dtype) end
    if not core.usable(v, "random." .. op) then fail("random.%s: %s must be a number or an array, got %s", op, name, type(v)) end
    local okb, b = pcall(hl.broadcast_to, hl.astype(v, dtype), s)
    if not okb then fail("random.%s: %s of shape %s does not broadcast to the shape %s", op, name, shape_str(v.shape), shape_str(s)) end
    return b
  end

  -- the sample shape: given, or the broadcast shape of the parameters
  local function sample_shape(op, shape, ...)
    if shape ~= nil then return (shape_of(op, shape)) end
    local s = {}
    for i = 1, select("#", ...) do
      local v = select(i, ...)
      if is_array(v) then
        local okb, b = pcall(hl.broadcast_to, hl.zeros(s), v.shape)
        if not okb then fail("random.%s: parameters of shapes %s and %s do not broadcast together", op, shape_str(s), shape_str(v.shape)) end
        s = b.shape
        if #s < v.ndim then s = v.shape end
      end
    end
    return s
  end

  local function keys(key, n)
    local ks = R.split(key, n)
    local r = {}
    for i = 1, n do r[i] = ks[i] end
    return r
  end

  -- x (rounds along axis 1) at the first round in which accept holds, and whether any did. The
  -- round is picked by a one-hot mask and a sum over the rounds, not by a gather: a gather makes
  -- Halide evaluate the whole sampler per picked element, and compile for minutes in float32.
  local function first_accepted(k, accept, x)
    local idx = hl.argmax(hl.astype(accept, "int32"), 1, true)
    local ones = {ROUNDS}
    for i = 2, accept.ndim do ones[i] = 1 end
    local mask = hl.eq(hl.reshape(on(k, hl.arange(1, ROUNDS + 1, "int64")), ones), idx)
    return hl.sum(hl.where(mask, x, 0), 1), hl.any(accept, 1)
  end

  ---------------------------------------------------------------- gamma, beta, dirichlet

  -- log of Gamma(alpha) samples (alpha an array of shape s, dtype float32 or float64), by
  -- Marsaglia and Tsang (2000): for alpha >= 1, d (1 + c z)^3 with z normal, accepted when
  -- log u < z^2 / 2 + d - d v + d log v; for alpha < 1 a Gamma(alpha + 1) sample times
  -- u^(1 / alpha) (their boost), taken in logs so tiny alpha does not underflow to log 0
  local function log_gamma(key, alpha, s, dtype)
    local k = keys(key, 3)
    local boost = hl.lt(alpha, 1)
    local a1 = hl.where(boost, alpha + 1, alpha)
    local d = a1 - 1 / 3
    local c = 1 / hl.sqrt(9 * d)
    local rs = cat({ROUNDS}, s)
    local z = R.normal(k[1], rs, dtype)
    local u = R.uniform(k[2], rs, dtype)
    local v = (1 + c * z) ^ 3
    local pos = hl.gt(v, 0)
    local vs = hl.where(pos, v, 1)
    local accept = hl.logical_and(pos, hl.lt(hl.log(u), 0.5 * z * z + d - d * vs + d * hl.log(vs)))
    local picked, any = first_accepted(R.check_key("gamma", key), accept, hl.log(vs))
    local lv = hl.where(any, picked, 0)
    local lx = hl.log(d) + lv
    local ub = 1 - R.uniform(k[3], s, dtype)                  -- in (0, 1]
    return hl.where(boost, lx + hl.log(ub) / alpha, lx)
  end

  local function float_out(op, dtype)
    dtype = check_float(op, dtype)
    return dtype, util.is_half(dtype) and "float32" or dtype
  end

  local function positive(v) return v > 0 end

  -- Gamma samples by rejection have no useful pathwise derivative in their shape parameter (the
  -- accepted candidate depends on it). Their derivative is the implicit one (Figurnov et al.,
  -- "Implicit reparameterization gradients", 2018; JAX's random_gamma_grad): a sample x moves with
  -- alpha so that its CDF level stays put, dx/dalpha = -(dP(alpha, x)/dalpha) / pdf(x), with P the
  -- regularised lower incomplete gamma function (random_gamma_grad.lua). It enters the samples'
  -- logs as a custom group of autodiff (ad.lua): the values are the samples, and both rules multiply
  -- by dlx, so every transformation (grad, jvp, jit, vmap) sees it as the derivative. dlx itself
  -- is not differentiated (neither is JAX's): the rules take it through a guard whose own rules
  -- raise, so a second derivative in alpha is an error rather than a silent zero.
  local tracing = require "halua.trace"
  local dlog_gamma = require("halua.random_gamma_grad")(hl)
  local function differentiated(v)
    if not is_array(v) or (tracing.differentiating == 0 and tracing.forward_mode == 0) then return false end
    local trace, id = core.trace_of(v)
    if not trace or not v.dtype:match("float") then return false end
    return core.graph_nodes(trace, id, id)[id].op ~= "stop_gradient"
  end
  local ad = priv.ad
  local SECOND = "random.gamma: no second derivative with respect to the shape parameter a (JAX has none " ..
                 "either); beta and dirichlet are built on gamma"
  -- d as a value that depends, for autodiff, on alpha, with rules that raise: what the first
  -- derivative's rules return is made of it, so only a derivative of a derivative reaches them
  local function guarded(d, alpha)
    local trace = core.trace_of(alpha)
    if not trace then return d end
    return ad.group(trace, {ad.node_in(trace, alpha)}, {d}, function() fail(SECOND) end, function() fail(SECOND) end)[1]
  end
  local function with_derivative(lx, alpha, diff)
    if not diff then return lx end
    local a0, l0 = hl.stop_gradient(alpha), hl.stop_gradient(lx)
    local d = hl.astype(dlog_gamma(hl.astype(a0, "float64"), hl.astype(l0, "float64")), lx.dtype)
    local trace = core.trace_of(alpha)
    local function rule(c) return c and c * guarded(d, alpha) or false end
    return ad.group(trace, {ad.node_in(trace, alpha)}, {l0},
                    function(cts) return {rule(cts[1])} end,
                    function(ts) return {ts[1] and rule(ts[1]) or nil} end)[1]
  end

  function R.gamma(key, a, shape, dtype)
    local k = R.check_key("gamma", key)
    local out, work = float_out("gamma", dtype)
    local s = sample_shape("gamma", shape, a)
    local alpha = param("gamma", "a", a, s, work, k, positive, "positive")
    return hl.exp(with_derivative(log_gamma(key, alpha, s, work), alpha, differentiated(a))):astype(out)
  end

  function R.beta(key, a, b, shape, dtype)
    local k = R.check_key("beta", key)
    local out, work = float_out("beta", dtype)
    local s = sample_shape("beta", shape, a, b)
    local aa = param("beta", "a", a, s, work, k, positive, "positive")
    local bb = param("beta", "b", b, s, work, k, positive, "positive")
    local ks = keys(key, 2)
    -- X / (X + Y) for X ~ Gamma(a), Y ~ Gamma(b), from their logs: exact also when both are tiny
    local lx = with_derivative(log_gamma(ks[1], aa, s, work), aa, differentiated(a))
    local ly = with_derivative(log_gamma(ks[2], bb, s, work), bb, differentiated(b))
    return (1 / (1 + hl.exp(ly - lx))):astype(out)
  end

  function R.dirichlet(key, alpha, shape, dtype)
    local k = R.check_key("dirichlet", key)
    local out, work = float_out("dirichlet", dtype)
    if type(alpha) == "table" and not is_array(alpha) then alpha = hl.array(alpha, work) end
    if not core.usable(alpha, "random.dirichlet") or alpha.ndim == 0 then
      fail("random.dirichlet: alpha must be an array with a last axis of concentrations, got %s",
           is_array(alpha) and util.type_str(alpha) or type(alpha))
    end
    local nk = alpha.shape[alpha.ndim]
    local batch = alpha.shape
    batch[#batch] = nil
    local s = shape ~= nil and shape_of("dirichlet", shape) or batch
    local full = cat(s, {nk})
    local al = param("dirichlet", "alpha", alpha, full, work, k)
    -- independent Gamma(alpha_i) normalised to sum 1: a softmax of their logs
    local lg = with_derivative(log_gamma(key, al, full, work), al, differentiated(alpha))
    return hl.exp(lg - hl.logsumexp(lg, -1, true)):astype(out)
  end

  ---------------------------------------------------------------- truncated_normal

  local SQRT2 = math.sqrt(2)
  -- the standard normal CDF (float64): from erf, except below -3, where 1 + erf loses the
  -- relative precision of the tail: there phi(x) / t with t Laplace's continued fraction
  -- |x| + 1 / (|x| + 2 / (|x| + ...)), 40 terms (relative error below 1e-13 from |x| = 3 on)
  local function Phi(x)
    local tail = hl.lt(x, -3)
    local z = -hl.where(tail, x, -3)
    local t = z
    for k = 40, 1, -1 do t = z + k / t end
    local q = hl.exp(-z * z / 2) / (math.sqrt(2 * math.pi) * t)
    return hl.where(tail, q, 0.5 * (1 + hl.erf(x / SQRT2)))
  end
  local function poly(x, cs)
    local r = cs[1]
    for i = 2, #cs do r = r * x + cs[i] end
    return r
  end
  local A = {-3.969683028665376e+01, 2.209460984245205e+02, -2.759285104469687e+02, 1.383577518672690e+02, -3.066479806614716e+01, 2.506628277459239e+00}
  local B = {-5.447609879822406e+01, 1.615858368580409e+02, -1.556989798598866e+02, 6.680131188771972e+01, -1.328068155288572e+01, 1}
  local C = {-7.784894002430293e-03, -3.223964580411365e-01, -2.400758277161838e+00, -2.549732539343734e+00, 4.374664141464968e+00, 2.938163982698783e+00}
  local D = {7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e+00, 3.754408661907416e+00, 1}
  local PLOW = 0.02425
  -- the standard normal quantile of p (float64): Acklam's rational approximations (relative
  -- error below 1.2e-9), refined in the central region by one Halley step on erf
  local function ndtri(pr)
    local lower = hl.lt(pr, PLOW)
    local upper = hl.gt(pr, 1 - PLOW)
    local pt = hl.where(upper, 1 - pr, pr)
    local q = hl.sqrt(-2 * hl.log(hl.where(hl.logical_or(lower, upper), pt, 0.5)))
    local tail = poly(q, C) / poly(q, D)
    tail = hl.where(upper, -tail, tail)
    local qc = pr - 0.5
    local r = qc * qc
    local x = poly(r, A) * qc / poly(r, B)
    local e = Phi(x) - pr
    local u = e * math.sqrt(2 * math.pi) * hl.exp(x * x / 2)
    x = x - u / (1 + x * u / 2)
    return hl.where(hl.logical_or(lower, upper), tail, x)
  end

  -- by the inverse CDF in float64, over the interval reflected to the left of 0 where Phi keeps
  -- its relative precision (also far in the tail); the result is clipped into [lower, upper]
  function R.truncated_normal(key, lower, upper, shape, dtype)
    local k = R.check_key("truncated_normal", key)
    local out = check_float("truncated_normal", dtype)
    if type(lower) == "number" and type(upper) == "number" and not (lower < upper) then
      fail("random.truncated_normal: lower (%s) must be less than upper (%s)", tostring(lower), tostring(upper))
    end
    local s = sample_shape("truncated_normal", shape, lower, upper)
    local lo = param("truncated_normal", "lower", lower, s, "float64", k)
    local hi = param("truncated_normal", "upper", upper, s, "float64", k)
    local flip = hl.gt(lo, 0)
    local l, h = hl.where(flip, -hi, lo), hl.where(flip, -lo, hi)
    local pl, ph = Phi(l), Phi(h)
    local pr = pl + R.uniform(key, s, "float64") * (ph - pl)
    local x = hl.minimum(hl.maximum(ndtri(pr), l), h)
    return hl.where(flip, -x, x):astype(out)
  end

  ---------------------------------------------------------------- poisson

  local KNUTH_LAM, KNUTH_DRAWS = 10, 48
  local LOG_FACT = {}
  do
    local acc = 0
    for i = 0, 9 do
      if i > 1 then acc = acc + math.log(i) end
      LOG_FACT[i + 1] = acc
    end
  end
  -- log(k!) for integer-valued k >= 0 (float64): a table below 10, Stirling's series above (error
  -- below 1e-12 there)
  local function log_factorial(k, key)
    local small = hl.lt(k, 10)
    local n = hl.where(small, 11, k + 1)
    local st = (n - 0.5) * hl.log(n) - n + 0.5 * math.log(2 * math.pi) + 1 / (12 * n) - 1 / (360 * n ^ 3) + 1 / (1260 * n ^ 5)
    local tab = hl.take(on(key, hl.array(LOG_FACT, "float64")), hl.astype(hl.where(small, k, 0), "int64") + 1)
    return hl.where(small, tab, st)
  end

  -- lam < 10: Knuth's count of uniforms whose running product stays above exp(-lam) (48 draws;
  -- more are needed with probability below 1e-17); lam >= 10: Hormann's transformed rejection
  -- (PTRS, 1993), as NumPy and JAX use
  function R.poisson(key, lam, shape, dtype)
    local k = R.check_key("poisson", key)
    dtype = dtype or "int32"
    if dtype ~= "int32" and dtype ~= "int64" and dtype ~= "float32" and dtype ~= "float64" then
      fail("random.poisson: dtype must be int32, int64, float32 or float64, got %s", tostring(dtype))
    end
    local s = sample_shape("poisson", shape, lam)
    local lm = param("poisson", "lam", lam, s, "float64", k, function(v) return v >= 0 and v < math.huge end, "a finite number >= 0")
    local ks = keys(key, 3)
    -- Knuth
    local u = 1 - R.uniform(ks[1], cat(s, {KNUTH_DRAWS}), "float64")
    local cs = hl.cumsum(hl.log(u), #s + 1)
    local n_small = hl.sum(hl.astype(hl.gt(cs, -hl.expand_dims(lm, -1)), "float64"), #s + 1)
    -- PTRS
    local big = hl.ge(lm, KNUTH_LAM)
    local L = hl.where(big, lm, KNUTH_LAM)
    local slam, loglam = hl.sqrt(L), hl.log(L)
    local b = 0.931 + 2.53 * slam
    local a = -0.059 + 0.02483 * b
    local inv_alpha = 1.1239 + 1.1328 / (b - 3.4)
    local vr = 0.9277 - 3.6224 / (b - 2)
    local rs = cat({ROUNDS}, s)
    local U = R.uniform(ks[2], rs, "float64") - 0.5
    local V = R.uniform(ks[3], rs, "float64")
    local us = 0.5 - hl.abs(U)
    local uss = hl.maximum(us, 1e-300)
    local kk = hl.floor((2 * a / uss + b) * U + L + 0.43)
    local quick = hl.logical_and(hl.ge(us, 0.07), hl.le(V, vr))
    local reject = hl.logical_or(hl.lt(kk, 0), hl.logical_and(hl.lt(us, 0.013), hl.gt(V, us)))
    local k0 = hl.maximum(kk, 0)
    local full = hl.le(hl.log(V) + hl.log(inv_alpha) - hl.log(a / (uss * uss) + b), -L + k0 * loglam - log_factorial(k0, k))
    local accept = hl.logical_or(quick, hl.logical_and(hl.logical_not(reject), full))
    local picked, any = first_accepted(k, accept, k0)
    local n_big = hl.where(any, picked, hl.floor(L))
    return hl.where(big, n_big, n_small):astype(dtype)
  end

  ---------------------------------------------------------------- choice

  -- choice(key, a, shape, {replace = true, p = probabilities, axis = 1}): samples of 1..a (a a
  -- number: 1-based, as halua's indices) or of a's entries along axis
  function R.choice(key, a, shape, opts)
    local k = R.check_key("choice", key)
    opts = util.options("random.choice", opts, {"replace", "p", "axis"}, "{replace = false, p = probs}")
    local n, axis
    if type(a) == "number" then
      if a ~= math.floor(a) or a < 1 then fail("random.choice: a must be a positive integer (choose from 1..a) or an array, got %s", tostring(a)) end
      n = a
    elseif core.usable(a, "random.choice") then
      if a.ndim == 0 then fail("random.choice: a is a 0-d array; give a number n (to choose from 1..n) or an array with an axis") end
      axis = opts.axis or 1
      if type(axis) ~= "number" or axis == 0 or axis ~= math.floor(axis) or math.abs(axis) > a.ndim then
        fail("random.choice: axis %s is out of range for a of shape %s", tostring(axis), shape_str(a.shape))
      end
      axis = axis < 0 and a.ndim + 1 + axis or axis
      n = a.shape[axis]
      if n == 0 then fail("random.choice: a has no entries along axis %d (shape %s)", axis, shape_str(a.shape)) end
    else
      fail("random.choice: a must be a positive integer or an array, got %s", type(a))
    end
    if opts.axis ~= nil and axis == nil then fail("random.choice: the axis option needs an array a") end
    local s, m = shape_of("choice", shape == nil and {} or shape)
    local replace = opts.replace
    if replace == nil then replace = true end
    if type(replace) ~= "boolean" then fail("random.choice: replace must be a boolean, got %s", type(replace)) end
    local pr = opts.p
    if pr ~= nil then
      if type(pr) == "table" and not is_array(pr) then pr = hl.array(pr) end
      if not core.usable(pr, "random.choice") or pr.ndim ~= 1 or pr.shape[1] ~= n then
        fail("random.choice: p must be a 1-d array of %d probabilities (one per choice), got %s", n,
             is_array(pr) and util.type_str(pr) or type(pr))
      end
      if not pr.dtype:match("float") then pr = pr:astype("float32") end
    end
    if not replace and m > n then
      fail("random.choice: cannot take %d samples without replacement from %d choices; ask for at most %d or set replace = true", m, n, n)
    end
    local idx
    if replace and pr == nil then
      idx = R.randint(key, s, 1, n + 1, "int64")
    elseif replace then
      idx = R.categorical(key, hl.log(pr), -1, s)
    else
      -- the first m of a random order: of uniform words, or of log p plus Gumbel noise (which
      -- takes without replacement in proportion to p)
      local score
      if pr == nil then
        score = priv.bits(k, n)
      else
        local u = (hl.astype(hl.right_shift(priv.bits(k, n), 8), pr.dtype == "float64" and "float64" or "float32") + 0.5) * 2 ^ -24
        score = -(hl.log(pr) - hl.log(-hl.log(u)))
      end
      idx = hl.argsort(score)
      if m < n then idx = idx[{{1, m}}] end
      idx = hl.reshape(idx, s)
    end
    if axis == nil then return idx end
    local flat = hl.reshape(idx, {m})
    local taken = hl.take(a, flat, axis)
    local out = {}
    local sh = a.shape
    for i = 1, axis - 1 do out[#out + 1] = sh[i] end
    for _, e in ipairs(s) do out[#out + 1] = e end
    for i = axis + 1, #sh do out[#out + 1] = sh[i] end
    return hl.reshape(taken, out)
  end

  -- errors of the ops these call carry these functions' names
  if priv.named then
    for _, n in ipairs {"choice", "gamma", "beta", "dirichlet", "truncated_normal", "poisson", "categorical", "permutation"} do
      R[n] = priv.named("random." .. n, R[n])
    end
  end

  -- the names a Torch user types first, with keys: randn is normal, rand is uniform
  R.randn = R.normal
  R.rand = R.uniform
end
