-- The implicit derivative of Gamma(alpha) samples in alpha (random_dists.lua uses it for gamma,
-- beta and dirichlet): a sample x keeps its CDF level P(alpha, x) as alpha moves, so
--   dx/dalpha = -(dP/dalpha) / pdf(x),   pdf(x) = x^(alpha - 1) e^-x / Gamma(alpha).
-- Returned as d(log x)/dalpha from log x (the samplers work in logs, so a sample that underflows
-- to 0 in float32 still has its derivative). dP/dalpha is differentiated along the classical
-- evaluations of P (Cephes' igam/igamc, as JAX's igamma_grad_a and random_gamma_grad do):
--   x <= 1 or x <= alpha: the series P = x^a e^-x / Gamma(a + 1) * S, S = sum_n x^n / ((a+1)..(a+n)),
--       so d(log x)/da = -(S (log x - digamma(a + 1)) + dS/da) / a;
--   else the continued fraction Q = 1 - P = x^a e^-x / Gamma(a) * C (its convergents p_k / q_k), so
--       d(log x)/da = C (log x - digamma(a)) + dC/da.
-- The prefactors x^a e^-x / Gamma cancel against the pdf, so nothing here under- or overflows.
-- Both run a fixed number of steps (STEPS) in one hl.fori_loop, so the derivative is the same
-- code eagerly, under jit and under vmap. Near x = alpha they need about sqrt(72 alpha) steps
-- for float64 precision: STEPS covers alpha up to about 900 to 1e-8 relative (float32's
-- precision up to about 2000); past that the Wilson-Hilferty limit takes over (below).
-- Everything is float64.
return function(hl)
  local STEPS = 256
  local BIG_ALPHA = 900
  local EPS = 2.220446049250313e-16

  -- digamma(z), z > 0: the recurrence digamma(z) = digamma(z + 8) - sum 1 / (z + k), then the
  -- asymptotic series at z + 8 >= 8 (its first omitted term is below 1e-13)
  local function digamma(z)
    local acc = -1 / z
    for k = 1, 7 do acc = acc - 1 / (z + k) end
    local w = z + 8
    local w2 = 1 / (w * w)
    local tail = w2 * (1 / 12 - w2 * (1 / 120 - w2 * (1 / 252 - w2 * (1 / 240 - w2 / 132))))
    return acc + hl.log(w) - 0.5 / w - tail
  end

  -- one step of both evaluations; s carries the series' term c, its sum and their derivatives,
  -- and the continued fraction's last two convergents' numerators p and denominators q with theirs
  local function step(_, s)
    local x = s.x
    local r = s.r + 1
    local dc = s.dc * (x / r) - s.c * x / (r * r)
    local c = s.c * (x / r)
    local k, y, z = s.k + 1, s.y + 1, s.z + 2
    local yk = y * k
    local p = s.p1 * z - s.p2 * yk
    local q = s.q1 * z - s.q2 * yk
    -- d/da of y and z is -1, so d(yk)/da = -k
    local dp = s.dp1 * z - s.p1 - s.dp2 * yk + s.p2 * k
    local dq = s.dq1 * z - s.q1 - s.dq2 * yk + s.q2 * k
    local ok = hl.ne(q, 0)
    local qs = hl.where(ok, q, 1)
    local cf = hl.where(ok, p / qs, s.cf)
    local dcf = hl.where(ok, (dp - cf * dq) / qs, s.dcf)
    -- the convergents grow geometrically: scaled down together, their ratios stay
    local scale = hl.where(hl.gt(hl.abs(p), 1 / EPS), EPS, 1)
    return {x = x, r = r, c = c, dc = dc, sum = s.sum + c, dsum = s.dsum + dc, k = k, y = y, z = z,
            p1 = p * scale, p2 = s.p1 * scale, q1 = q * scale, q2 = s.q1 * scale,
            dp1 = dp * scale, dp2 = s.dp1 * scale, dq1 = dq * scale, dq2 = s.dq1 * scale, cf = cf, dcf = dcf}
  end

  -- d(log x)/da for large a by the Wilson-Hilferty limit: (x / a)^(1/3) is normal with mean
  -- 1 - 1 / (9a) and deviation 1 / (3 sqrt(a)); holding its standard score fixed gives the
  -- derivative (relative error O(1/a), below 1e-3 where it is used)
  local function wilson_hilferty(a, lx)
    local m = hl.exp((lx - hl.log(a)) / 3)                 -- (x / a)^(1/3)
    local z = (m - 1 + 1 / (9 * a)) * 3 * hl.sqrt(a)
    local dm = 1 / (9 * a * a) - z / (6 * a * hl.sqrt(a))   -- d/da of m at fixed z
    return 1 / a + 3 * dm / m
  end

  return function(a, lx)
    local x = hl.exp(lx)
    local one, zero = hl.ones_like(a), hl.zeros_like(a)
    -- the continued fraction's start: y = 1 - a, z = x + y + 1, convergents 1 / x and (x + 1) / (z x)
    local y = 1 - a
    local z = x + y + 1
    local q1 = z * x
    local cf0 = (x + 1) / q1
    local s = hl.fori_loop(1, STEPS, step, {
      x = x, r = a, c = one, dc = zero, sum = one, dsum = zero,
      k = zero, y = y, z = z, p1 = x + 1, p2 = one, q1 = q1, q2 = x,
      dp1 = zero, dp2 = zero, dq1 = -x, dq2 = zero, cf = cf0, dcf = cf0 * x / q1,
    })
    local series = -(s.sum * (lx - digamma(a + 1)) + s.dsum) / a
    local fraction = s.cf * (lx - digamma(a)) + s.dcf
    local d = hl.where(hl.logical_and(hl.gt(x, 1), hl.gt(x, a)), fraction, series)
    return hl.where(hl.gt(a, BIG_ALPHA), wilson_hilferty(a, lx), d)
  end
end
