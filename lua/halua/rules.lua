-- The differentiation rules: one entry per primitive of engine/core/hl_prims.def, keyed by its
-- name. They are written with halua's own ops, so they run eagerly, record onto an autodiff tape
-- or trace into a jit pipeline like any other code, and derivatives of derivatives work.
--
-- An entry is one of:
--   {deriv = function(x, z, n) -> {dz/dx1, dz/dx2, ...}}   elementwise: the partial derivatives
--       (nil for an input that gets none); reverse mode multiplies the cotangent by each, forward
--       mode sums tangent * derivative.
--   {vjp = function(g, n, x, z) -> {ct1, ct2, ...}, jvp = function(t, n, x, z) -> tangent}
--       g: the output's cotangent; t: the inputs' tangents (nil for zero); x: the inputs' values
--       (fetched when indexed); z: the output's value; n: the node (op, ins, dtype, shape and the
--       attributes: axes, perm, start, step, axis).
--   {zero = true}     piecewise constant (floor, sign, ...): no cotangent, zero tangent
--   {nondiff = true}  integer or boolean results: autodiff never reaches them
-- and, for hl.vmap, batch = function(n, x, b, size) -> value, batched (below). Every primitive
-- has its entry here except compiled loops, whose node control.lua registers with R.define.
return function(hl, core)
  local R = {}

  local mat = require("halua.matrix")(hl, core)
  local swap_last = mat.swap_last

  local function as(x, dtype) return x.dtype == dtype and x or hl.astype(x, dtype) end
  local function zeros(shape, dtype, like) return hl.fill_like(like, 0, shape, dtype) end

  -- g reduced over `axes` of `shape` (1-based) brought back to `shape`
  local function expand_reduced(g, shape, axes)
    local kept, drop = {}, {}
    for _, a in ipairs(axes) do drop[a] = true end
    for i = 1, #shape do kept[i] = drop[i] and 1 or shape[i] end
    return hl.broadcast_to(hl.reshape(g, kept), shape)
  end

  -- the sum of g (shaped like a broadcast result) back to `shape`
  local function unbroadcast(g, shape)
    local gs = g.shape
    local lead = #gs - #shape
    local axes = {}
    for i = 1, #gs do
      if i <= lead or (shape[i - lead] == 1 and gs[i] ~= 1) then axes[#axes + 1] = i end
    end
    local r = #axes > 0 and hl.sum(g, axes) or g
    return hl.reshape(r, shape)
  end
  R.unbroadcast = unbroadcast

  local function zero() return {zero = true} end
  local function nondiff() return {nondiff = true} end
  local function deriv(f) return {deriv = f} end

  ---------------------------------------------------------------- sources
  R.param, R.const, R.iota = zero(), zero(), zero()

  ---------------------------------------------------------------- unary
  R.neg = {vjp = function(g) return {-g} end, jvp = function(t) return -t[1] end}
  R.abs = deriv(function(x) return {hl.sign(x[1])} end)   -- JAX: sign(0) = 0
  R.sign, R.floor, R.ceil, R.round = zero(), zero(), zero(), zero()
  R.square = deriv(function(x) return {2 * x[1]} end)
  R.reciprocal = deriv(function(_, z) return {-(z * z)} end)
  R.exp = deriv(function(_, z) return {z} end)
  R.expm1 = deriv(function(_, z) return {z + 1} end)
  R.log = deriv(function(x) return {hl.reciprocal(x[1])} end)
  R.log1p = deriv(function(x) return {hl.reciprocal(x[1] + 1)} end)
  R.sqrt = deriv(function(_, z) return {0.5 / z} end)
  R.rsqrt = deriv(function(x, z) return {-0.5 * z / x[1]} end)
  R.sin = deriv(function(x) return {hl.cos(x[1])} end)
  R.cos = deriv(function(x) return {-hl.sin(x[1])} end)
  R.tan = deriv(function(_, z) return {1 + z * z} end)
  R.asin = deriv(function(x) return {hl.rsqrt(1 - x[1] * x[1])} end)
  R.acos = deriv(function(x) return {-hl.rsqrt(1 - x[1] * x[1])} end)
  R.atan = deriv(function(x) return {hl.reciprocal(1 + x[1] * x[1])} end)
  R.sinh = deriv(function(x) return {hl.cosh(x[1])} end)
  R.cosh = deriv(function(x) return {hl.sinh(x[1])} end)
  R.tanh = deriv(function(_, z) return {1 - z * z} end)
  local two_over_sqrt_pi = 2 / math.sqrt(math.pi)
  R.erf = deriv(function(x) return {two_over_sqrt_pi * hl.exp(-(x[1] * x[1]))} end)
  R.isnan, R.isinf, R.isfinite, R.logical_not = nondiff(), nondiff(), nondiff(), nondiff()
  R.cast = {
    -- (a real value made complex: its cotangent is the real part, JAX's convert_element_type)
    vjp = function(g, _, x)
      local c = x[1].dtype == "complex64" or x[1].dtype == "complex128"
      if not c and (g.dtype == "complex64" or g.dtype == "complex128") then g = hl.real(g) end
      return {hl.astype(g, x[1].dtype)}
    end,
    jvp = function(t, n) return hl.astype(t[1], n.dtype) end,
  }
  R.stop_gradient = zero()

  ---------------------------------------------------------------- binary
  R.add = {
    vjp = function(g) return {g, g} end,
    jvp = function(t) return t[1] and t[2] and t[1] + t[2] or t[1] or t[2] end,
  }
  R.sub = {
    vjp = function(g) return {g, -g} end,
    jvp = function(t) return t[1] and t[2] and t[1] - t[2] or t[1] or -t[2] end,
  }
  R.mul = deriv(function(x) return {x[2], x[1]} end)
  R.div = deriv(function(x, z) return {hl.reciprocal(x[2]), -z / x[2]} end)
  R.pow = deriv(function(x, z)
    local a, b = x[1], x[2]
    -- JAX's conventions: d/da is 0 where b == 0, and d/db is 0 where a == 0
    local da = hl.where(hl.eq(b, 0), 0, b * hl.pow(a, b - 1))
    local db = hl.where(hl.eq(a, 0), 0, z * hl.log(hl.where(hl.eq(a, 0), 1, a)))
    return {da, db}
  end)
  R.mod = deriv(function(x) return {1, -hl.floor_divide(x[1], x[2])} end)
  R.floor_divide = zero()
  -- ties split the derivative evenly between the two operands (JAX's convention)
  local function pick(better)
    return deriv(function(x, _, n)
      local a, b = x[1], x[2]
      local tie = 0.5 * as(hl.eq(a, b), n.dtype)
      return {as(better(a, b), n.dtype) + tie, as(better(b, a), n.dtype) + tie}
    end)
  end
  R.maximum = pick(hl.gt)
  R.minimum = pick(hl.lt)
  R.atan2 = deriv(function(x)
    local a, b = x[1], x[2]
    local r = hl.reciprocal(a * a + b * b)
    return {b * r, -a * r}
  end)
  for _, name in ipairs {"eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or", "logical_xor",
                         "bitwise_and", "bitwise_or", "bitwise_xor", "left_shift", "right_shift", "threefry2x32"} do
    R[name] = nondiff()
  end
  R.where = {
    vjp = function(g, _, x) return {nil, hl.where(x[1], g, 0), hl.where(x[1], 0, g)} end,
    jvp = function(t, n, x)
      local a, b = t[2] or zeros(n.shape, n.dtype, x[1]), t[3] or zeros(n.shape, n.dtype, x[1])
      return hl.where(x[1], a, b)
    end,
  }

  ---------------------------------------------------------------- reductions
  R.sum = {
    vjp = function(g, n, x) return {expand_reduced(g, x[1].shape, n.axes)} end,
    jvp = function(t, n) return hl.sum(t[1], n.axes) end,
  }
  -- the derivative of a product by each factor is the product of the others, also at zeros
  local function prod_partials(n, x, z)
    local a, shape = x[1], x[1].shape
    local is0 = hl.eq(a, 0)
    local zeros_in = expand_reduced(hl.sum(as(is0, "int32"), n.axes), shape, n.axes)
    local others = expand_reduced(hl.prod(hl.where(is0, 1, a), n.axes), shape, n.axes)
    local zb = expand_reduced(z, shape, n.axes)
    return hl.where(hl.eq(zeros_in, 0), zb / hl.where(is0, 1, a),
      hl.where(hl.logical_and(is0, hl.eq(zeros_in, 1)), others, 0))
  end
  R.prod = {
    vjp = function(g, n, x, z) return {expand_reduced(g, x[1].shape, n.axes) * prod_partials(n, x, z)} end,
    jvp = function(t, n, x, z) return hl.sum(t[1] * prod_partials(n, x, z), n.axes) end,
  }
  -- max and min: the cotangent is shared evenly among the elements equal to the result
  local function extreme_weights(n, x, z)
    local shape = x[1].shape
    local mask = as(hl.eq(x[1], expand_reduced(z, shape, n.axes)), n.dtype)
    return mask / expand_reduced(hl.sum(mask, n.axes), shape, n.axes)
  end
  local extreme = {
    vjp = function(g, n, x, z) return {expand_reduced(g, x[1].shape, n.axes) * extreme_weights(n, x, z)} end,
    jvp = function(t, n, x, z) return hl.sum(t[1] * extreme_weights(n, x, z), n.axes) end,
  }
  R.max, R.min = extreme, extreme
  R.argmax, R.argmin = nondiff(), nondiff()

  ---------------------------------------------------------------- linear algebra
  R.matmul = {
    vjp = function(g, _, x) return {hl.matmul(g, swap_last(x[2])), hl.matmul(swap_last(x[1]), g)} end,
    jvp = function(t, _, x)
      local a = t[1] and hl.matmul(t[1], x[2])
      local b = t[2] and hl.matmul(x[1], t[2])
      return a and b and a + b or a or b
    end,
  }

  -- hl.linalg's primitives. At this level a is [..., n, n] and b [..., n, k] with equal batch
  -- dimensions (the frontend's broadcasts and reshapes have rules of their own).
  -- x = solve(a, b): from a x = b, a dx = db - da x, so dx = solve(a, db - da x); reverse mode
  -- gives b the cotangent gb = solve(a^T, g) and a the cotangent -gb x^T.
  R["linalg.solve"] = {
    vjp = function(g, _, x, z)
      local gb = hl.linalg.solve(swap_last(x[1]), g)
      return {-hl.matmul(gb, swap_last(z)), gb}
    end,
    jvp = function(t, _, x, z)
      local rhs = t[2]
      if t[1] then
        local d = hl.matmul(t[1], z)
        rhs = rhs and rhs - d or -d
      end
      return hl.linalg.solve(x[1], rhs)
    end,
  }
  -- (linalg.solve_triangular's rules follow triangle_masks, below)
  local triangle_masks = mat.triangle_masks   -- lower, diagonal (and upper)
  -- L = cholesky(a) reads a's lower triangle: it factors s = tril(a) + tril(a, -1)^T. With
  -- phi(m) = the lower triangle of m with its diagonal halved, dL = L phi(L^-1 ds L^-T)
  -- (Murray 2016, "Differentiation of the Cholesky decomposition"). Reverse mode: the cotangent
  -- of s is sym(S), S = L^-T phi(L^T gL) L^-1, and a's is that folded onto the lower triangle:
  -- S + S^T below the diagonal, S on it, 0 above (a's upper triangle is never read).
  R["linalg.cholesky"] = {
    vjp = function(g, _, _, z)
      local lower, diag = triangle_masks(z, z.shape[z.ndim])
      local p = hl.matmul(swap_last(z), g)
      p = hl.where(lower, p, hl.where(diag, 0.5 * p, 0))
      local lt = swap_last(z)
      local y = hl.linalg.solve(lt, p)                          -- L^-T P
      local s = swap_last(hl.linalg.solve(lt, swap_last(y)))    -- L^-T P L^-1
      return {hl.where(lower, s + swap_last(s), hl.where(diag, s, 0))}
    end,
    jvp = function(t, _, _, z)
      local lower, diag = triangle_masks(z, z.shape[z.ndim])
      local low = hl.where(lower, t[1], 0)
      local ds = low + swap_last(low) + hl.where(diag, t[1], 0)
      local w = hl.linalg.solve(z, ds)                          -- L^-1 dS
      local m = swap_last(hl.linalg.solve(z, swap_last(w)))     -- L^-1 dS L^-T
      return hl.matmul(z, hl.where(lower, m, hl.where(diag, 0.5 * m, 0)))
    end,
  }

  -- x = solve_triangular(a, b): solve's rules with m, the matrix the solve uses (a's triangle,
  -- its diagonal ones where unit, transposed where the mode says): dm is da's part in that
  -- triangle, and a's cotangent is the part of m's (-gb x^T) in it. Mode bits: 1 lower, 2
  -- transposed, 4 unit diagonal.
  local function tri_part(x, mode)
    local lower, diag = triangle_masks(x, x.shape[x.ndim])
    local tri = mode % 2 == 1 and lower or swap_last(lower)
    return hl.where(math.floor(mode / 4) % 2 == 1 and tri or hl.logical_or(tri, diag), x, 0)
  end
  local function transposed(mode) return math.floor(mode / 2) % 2 == 1 end
  R["linalg.solve_triangular"] = {
    vjp = function(g, n, x, z)
      local gb = core.linalg_solve_triangular(x[1], g, transposed(n.mode) and n.mode - 2 or n.mode + 2)
      local gm = -hl.matmul(gb, swap_last(z))
      return {tri_part(transposed(n.mode) and swap_last(gm) or gm, n.mode), gb}
    end,
    jvp = function(t, n, x, z)
      local rhs = t[2]
      if t[1] then
        local dm = tri_part(t[1], n.mode)
        local d = hl.matmul(transposed(n.mode) and swap_last(dm) or dm, z)
        rhs = rhs and rhs - d or -d
      end
      return core.linalg_solve_triangular(x[1], rhs, n.mode)
    end,
  }

  -- The decompositions (linalg.qr, linalg.svd, linalg.eigh, linalg.slogdet) give each matrix's
  -- factors packed in one vector (linalg_layout.lua): their rules unpack the cotangent, and pack
  -- the tangent, the same way. The formulas are JAX's (jax/_src/lax/linalg.py).
  local layout = require "halua.linalg_layout"
  local function dims(x) return x.shape[x.ndim - 1], x.shape[x.ndim] end
  local function batch_shape(x, drop)
    local s = {}
    for i = 1, x.ndim - drop do s[i] = x.shape[i] end
    return s
  end
  local function unpack_of(n, z, a, mode)
    local m, k = dims(a)
    return layout.unpack(core, n.op, mode or n.mode, z, m, k)
  end
  local function pack_of(n, a, mode, ...)
    local m, k = dims(a)
    return layout.pack(hl, n.op, mode or n.mode, m, k, batch_shape(a, 2), ...)
  end
  -- the full factors of a when the node has only some (svd's s alone, qr's r alone, eigh's values)
  local function factors(n, a, mode) return layout.unpack(core, n.op, mode, core.linalg_decomp(n.op, a, mode), dims(a)) end
  local function diag_of(x, like)   -- [..., k, k] -> [..., k]
    local _, diag = triangle_masks(like, x.shape[x.ndim])
    return hl.sum(hl.where(diag, x, 0), -1)
  end
  local function diag_matrix(v, like)   -- [..., k] -> [..., k, k]
    local _, diag = triangle_masks(like, v.shape[v.ndim])
    return hl.where(diag, hl.expand_dims(v, -2), 0)
  end
  local function row(v) return hl.expand_dims(v, -2) end   -- v_j along a row
  local function col(v) return hl.expand_dims(v, -1) end   -- v_i down a column
  -- F[i, j] = 1 / d[i, j] off the diagonal, 0 on it
  local function off_inverse(d, like)
    local _, diag = triangle_masks(like, d.shape[d.ndim])
    return hl.where(diag, 0, 1 / hl.where(diag, 1, d))
  end
  -- the symmetric matrix eigh reads from a (one triangle, by the node's mode), and the transpose
  -- of that map for cotangents (as cholesky's rule does)
  local function tri_masks(n, like)
    local lower, diag = triangle_masks(like, like.shape[like.ndim])
    if n.mode % 2 == 1 then lower = swap_last(lower) end
    return lower, diag
  end
  local function fold(t, n)
    local tri, diag = tri_masks(n, t)
    local low = hl.where(tri, t, 0)
    return low + swap_last(low) + hl.where(diag, t, 0)
  end
  local function unfold(s, n)
    local tri, diag = tri_masks(n, s)
    return hl.where(tri, s + swap_last(s), hl.where(diag, s, 0))
  end

  -- eigh: with P = v^T ds v, dw = diag(P) and dv = v (F o P), F[i, j] = 1 / (w_j - w_i)
  R["linalg.eigh"] = {
    jvp = function(t, n, x, z)
      local w, v = unpack_of(n, z, x[1])
      if not v then w, v = factors(n, x[1], n.mode % 2) end
      local p = hl.matmul(swap_last(v), hl.matmul(fold(t[1], n), v))
      local dw = diag_of(p, p)
      if n.mode >= 2 then return pack_of(n, x[1], nil, dw) end
      local f = off_inverse(row(w) - col(w), p)
      return pack_of(n, x[1], nil, dw, hl.matmul(v, f * p))
    end,
    vjp = function(g, n, x, z)
      local gw, gv = unpack_of(n, g, x[1])
      local w, v = unpack_of(n, z, x[1])
      if not v then w, v = factors(n, x[1], n.mode % 2) end
      local inner = diag_matrix(gw, v)
      if gv then inner = inner + off_inverse(row(w) - col(w), v) * hl.matmul(swap_last(v), gv) end
      return {unfold(hl.matmul(v, hl.matmul(inner, swap_last(v))), n)}
    end,
  }

  -- svd (reduced; full factors only for square matrices, where they are the reduced ones, as
  -- JAX): dS = u^T da v, ds = diag(dS), F[i, j] = 1 / (s_j^2 - s_i^2), du = u (F o (dS S + S
  -- dS^T)) (+ (I - u u^T) da v S^-1 when m > n), dv likewise with da^T and u
  local function svd_factors(n, a, z)
    local m, k = dims(a)
    if n.mode == 1 and m ~= k then
      error(string.format("halua: linalg.svd: no derivative of the full u and vh of a %dx%d matrix (they are not unique); pass full_matrices = false", m, k), 0)
    end
    if n.mode == 2 then return factors(n, a, 0) end
    return unpack_of(n, z, a)
  end
  R["linalg.svd"] = {
    jvp = function(t, n, x, z)
      local a, da = x[1], t[1]
      local u, s, vh = svd_factors(n, a, z)
      local v = swap_last(vh)
      local ds_mat = hl.matmul(swap_last(u), hl.matmul(da, v))
      local ds = diag_of(ds_mat, ds_mat)
      -- (values only: the layout's factor 2 holds them, as it does in the full mode)
      if n.mode == 2 then return pack_of(n, a, nil, nil, ds) end
      local f = off_inverse((row(s) + col(s)) * (row(s) - col(s)), ds_mat)
      local dss, sds = ds_mat * row(s), col(s) * ds_mat
      local du = hl.matmul(u, f * (dss + swap_last(dss)))
      local dv = hl.matmul(v, f * (sds + swap_last(sds)))
      local m, k = dims(a)
      if m > k then
        local dav = hl.matmul(da, v)
        du = du + (dav - hl.matmul(u, hl.matmul(swap_last(u), dav))) / row(s)
      elseif k > m then
        local dau = hl.matmul(swap_last(da), u)
        dv = dv + (dau - hl.matmul(v, hl.matmul(vh, dau))) / row(s)
      end
      return pack_of(n, a, nil, du, ds, swap_last(dv))
    end,
    vjp = function(g, n, x, z)
      local a = x[1]
      local u, s, vh = svd_factors(n, a, z)
      local gu, gs, gvh = unpack_of(n, g, a)
      if n.mode == 2 then return {hl.matmul(u * row(gs), vh)} end
      local v, gv = swap_last(vh), swap_last(gvh)
      local f = off_inverse((row(s) + col(s)) * (row(s) - col(s)), vh)
      local y = f * hl.matmul(swap_last(u), gu)
      local w = f * hl.matmul(vh, gv)
      local inner = diag_matrix(gs, vh) + (y + swap_last(y)) * row(s) + col(s) * (w + swap_last(w))
      local ga = hl.matmul(u, hl.matmul(inner, vh))
      local m, k = dims(a)
      if m > k then
        ga = ga + hl.matmul((gu - hl.matmul(u, hl.matmul(swap_last(u), gu))) / row(s), vh)
      elseif k > m then
        ga = ga + hl.matmul(u, swap_last((gv - hl.matmul(v, hl.matmul(vh, gv))) / row(s)))
      end
      return {ga}
    end,
  }

  -- qr (m >= n; complete only when square, as JAX): B = da r^-1, C = q^T B, O = tril(C, -1) -
  -- its transpose; dq = q (O - C) + B, dr = (C - O) r
  local function qr_factors(n, a, z)
    local m, k = dims(a)
    if m < k or (n.mode == 1 and m ~= k) then
      error(string.format("halua: linalg.qr: no derivative for a %dx%d matrix in mode %s (JAX's neither): it needs m >= n, and a square matrix for mode \"complete\"",
        m, k, n.mode == 1 and "\"complete\"" or n.mode == 2 and "\"r\"" or "\"reduced\""), 0)
    end
    if n.mode == 2 then return factors(n, a, 0) end
    return unpack_of(n, z, a)
  end
  local function right_solve(x, r) return swap_last(hl.linalg.solve(swap_last(r), swap_last(x))) end   -- x r^-1
  R["linalg.qr"] = {
    jvp = function(t, n, x, z)
      local q, r = qr_factors(n, x[1], z)
      local b = right_solve(t[1], r)
      local c = hl.matmul(swap_last(q), b)
      local lower = triangle_masks(c, c.shape[c.ndim])
      local low = hl.where(lower, c, 0)
      local o = low - swap_last(low)
      local dr = hl.matmul(c - o, r)
      if n.mode == 2 then return pack_of(n, x[1], nil, nil, dr) end
      return pack_of(n, x[1], nil, hl.matmul(q, o - c) + b, dr)
    end,
    vjp = function(g, n, x, z)
      local q, r = qr_factors(n, x[1], z)
      local gq, gr = unpack_of(n, g, x[1])
      local mm = -hl.matmul(gr, swap_last(r))
      if gq then mm = mm + hl.matmul(swap_last(q), gq) end
      local lower = triangle_masks(mm, mm.shape[mm.ndim])
      local gc = hl.where(lower, mm - swap_last(mm), 0) - mm
      local gb = hl.matmul(q, gc)
      if gq then gb = gb + gq end
      return {swap_last(hl.linalg.solve(r, swap_last(gb)))}   -- gb r^-T
    end,
  }

  -- det (slogdet's mode 1): its derivative is the cofactor matrix C = det(a) a^-T, which is
  -- defined at singular matrices too (rank n - 1: rank one; lower: zero). Where a is well
  -- conditioned (smallest singular value above eps^(1/3) times the largest) C is det(a) inv(a)^T;
  -- elsewhere, from a = u diag(s) vh, C = det(u vh) u diag(p) vh with p_i the product of the
  -- other singular values (JAX's det also avoids dividing by det there, with LU). Each branch
  -- gets a stand-in matrix where the other is used (the identity; diag(1..n), whose singular
  -- values differ), so that neither produces NaN for the derivatives of C (hessians).
  local function cofactor(a)
    local k = a.shape[a.ndim]
    if k == 0 then return hl.zeros_like(a) end
    local eps = a.dtype == "float64" and 2.220446049250313e-16 or 1.1920928955078125e-07
    local _, sv = factors({op = "linalg.svd"}, hl.stop_gradient(a), 2)
    local regular = hl.expand_dims(hl.gt(hl.min(sv, -1, true), eps ^ (1 / 3) * hl.max(sv, -1, true)), -1)
    local _, diag = triangle_masks(a, k)
    local ar = hl.where(regular, a, hl.astype(diag, a.dtype))
    local dr = hl.expand_dims(core.linalg_decomp("linalg.slogdet", ar, 1), -1)   -- [..., 1, 1]
    local c_regular = dr * swap_last(hl.linalg.inv(ar))
    local ramp = hl.astype(diag, a.dtype) * row(hl.arange(1, k + 1, a.dtype))
    local u, s, vh = factors({op = "linalg.svd"}, hl.where(regular, ramp, a), 0)
    local p = hl.prod(hl.where(diag, 1, row(s)), -1)
    local sign = hl.squeeze(hl.split(core.linalg_decomp("linalg.slogdet", hl.stop_gradient(hl.matmul(u, vh)), 0), 2, -1)[1], -1)
    local c_singular = hl.expand_dims(hl.expand_dims(sign, -1), -1) * hl.matmul(u * row(p), vh)
    return hl.where(regular, c_regular, c_singular)
  end

  -- slogdet: the sign's derivative is 0, log|det|'s is tr(a^-1 da); its cotangent a^-T g
  R["linalg.slogdet"] = {
    jvp = function(t, n, x)
      if n.mode == 1 then return hl.expand_dims(hl.sum(cofactor(x[1]) * t[1], {x[1].ndim - 1, x[1].ndim}), -1) end
      local dl = hl.sum(diag_of(hl.linalg.solve(x[1], t[1]), x[1]), -1)   -- tr(a^-1 da)
      local one = batch_shape(x[1], 2)
      one[#one + 1] = 1
      dl = hl.reshape(dl, one)
      return hl.concatenate({hl.zeros_like(dl), dl}, #one)
    end,
    vjp = function(g, n, x)
      if n.mode == 1 then return {hl.expand_dims(g, -1) * cofactor(x[1])} end
      local gl = hl.squeeze(hl.split(g, 2, -1)[2], -1)
      return {hl.expand_dims(hl.expand_dims(gl, -1), -1) * hl.linalg.inv(swap_last(x[1]))}
    end,
  }

  ---------------------------------------------------------------- sorting
  -- sort permutes each lane: out[j] = x[p[j]] with p = argsort(x). Forward mode permutes the
  -- tangent the same way; reverse mode sends g[j] back to position p[j], which is taking g at the
  -- inverse permutation argsort(p). Ties keep their order, so each gets its own cotangent.
  R.sort = {
    vjp = function(g, n, x)
      local p = hl.argsort(x[1], n.axis)
      return {hl.take_along_axis(g, hl.argsort(p, n.axis), n.axis)}
    end,
    jvp = function(t, n, x) return hl.take_along_axis(t[1], hl.argsort(x[1], n.axis), n.axis) end,
  }
  R.argsort = nondiff()

  ---------------------------------------------------------------- Fourier transforms
  -- Both are linear and act on the (re, im) pairs as real vectors. The forward matrix F is
  -- symmetric, so its transpose in the real inner product (sum of re*re + im*im) is its conjugate,
  -- the unscaled backward transform, and the other way round.
  R["fft.forward"] = {
    vjp = function(g, n) return {core.fft(g, n.axis - 1, true)} end,
    jvp = function(t, n) return core.fft(t[1], n.axis - 1, false) end,
  }
  R["fft.backward"] = {
    vjp = function(g, n) return {core.fft(g, n.axis - 1, false)} end,
    jvp = function(t, n) return core.fft(t[1], n.axis - 1, true) end,
  }
  -- fft.real keeps the first h = n // 2 + 1 values of the forward transform of real x; its adjoint
  -- takes the cotangent's pairs padded with zeros to n, transforms them backward and keeps the real
  -- parts: x_bar[j] = Re sum_{k < h} g[k] exp(2 pi i j k / n)
  R["fft.real"] = {
    vjp = function(g, n, x)
      local a, len = n.axis - 1, x[1].shape[n.axis]
      local h = g.shape[a + 1]
      if len > h then
        local zshape = g.shape
        zshape[a + 1] = len - h
        g = hl.concatenate({g, zeros(zshape, g.dtype, g)}, a + 1)
      end
      local y = core.fft(g, a, true)
      local start, step, count = {}, {}, y.shape
      for i = 1, y.ndim do start[i], step[i] = 0, 1 end
      count[y.ndim] = 1
      return {core.reshape(core.slice(y, start, step, count), x[1].shape)}
    end,
    jvp = function(t, n) return core.fft(t[1], n.axis - 1, "real") end,
  }
  -- fft.real_inverse's adjoint is fft.real weighted: each of the h = n // 2 + 1 values stands for
  -- itself and its conjugate partner (weight 2), except the first and, n even, the middle one
  R["fft.real_inverse"] = {
    vjp = function(g, n)
      local a = n.axis - 1
      local f = core.fft(g, a, "real")
      local h = f.shape[a + 1]
      local w = {}
      for k = 1, h do w[k] = (k == 1 or (n.n % 2 == 0 and k == h)) and 1 or 2 end
      local shape = {}
      for i = 1, f.ndim do shape[i] = 1 end
      shape[a + 1] = h
      return {f * hl.reshape(hl.array(w, f.dtype), shape)}
    end,
    jvp = function(t, n) return core.fft(t[1], n.axis - 1, "real_inverse", n.n) end,
  }

  ---------------------------------------------------------------- collectives (hl.dist)
  -- JAX's convention: a gradient under hl.dist is that of the sum of every rank's loss. So the
  -- cotangent of psum is psum (each rank's input reaches every rank's output), all_gather's is
  -- reduce_scatter and back, ppermute's is the inverse permutation, all_to_all's swaps its axes,
  -- and broadcast's is every rank's cotangent summed onto the root. pmax/pmin pass the tangent of
  -- the ranks holding the extreme (shared equally among ties).
  local function coll(name, x, a, b, size) return core.dist(name, x, a, b, size) end
  -- psum to one rank (n.root > 0: the others get zeros) is broadcast's transpose, and back
  R["dist.psum"] = {
    vjp = function(g, n)
      if n.root > 0 then return {coll("dist.broadcast", g, n.root - 1, 0, n.size)} end
      return {coll("dist.psum", g, 0, -1, n.size)}
    end,
    jvp = function(t, n) return coll("dist.psum", t[1], 0, n.root - 1, n.size) end,
  }
  local function extreme()
    -- where this rank holds the extreme, divided by how many ranks do
    local function share(n, x, z)
      local hit = hl.eq(x[1], z):astype(z.dtype)
      return hit / coll("dist.psum", hit, 0, -1, n.size)
    end
    return {
      vjp = function(g, n, x, z) return {share(n, x, z) * coll("dist.psum", g, 0, -1, n.size)} end,
      jvp = function(t, n, x, z) return coll("dist.psum", share(n, x, z) * t[1], 0, -1, n.size) end,
    }
  end
  R["dist.pmax"], R["dist.pmin"] = extreme(), extreme()
  R["dist.all_gather"] = {
    vjp = function(g, n) return {coll("dist.reduce_scatter", g, n.axis - 1, 0, n.size)} end,
    jvp = function(t, n) return coll("dist.all_gather", t[1], n.axis - 1, 0, n.size) end,
  }
  R["dist.reduce_scatter"] = {
    vjp = function(g, n) return {coll("dist.all_gather", g, n.axis - 1, 0, n.size)} end,
    jvp = function(t, n) return coll("dist.reduce_scatter", t[1], n.axis - 1, 0, n.size) end,
  }
  R["dist.all_to_all"] = {
    vjp = function(g, n) return {coll("dist.all_to_all", g, n.axis2 - 1, n.axis - 1, n.size)} end,
    jvp = function(t, n) return coll("dist.all_to_all", t[1], n.axis - 1, n.axis2 - 1, n.size) end,
  }
  R["dist.ppermute"] = {
    vjp = function(g, n) return {coll("dist.ppermute", g, n.recv_from - 1, n.send_to - 1, n.size)} end,
    jvp = function(t, n) return coll("dist.ppermute", t[1], n.send_to - 1, n.recv_from - 1, n.size) end,
  }
  R["dist.broadcast"] = {
    -- (every rank's cotangent summed onto the root by one collective that every rank runs: a
    -- rank-dependent choice here would drop the psum from some ranks' pipelines)
    vjp = function(g, n) return {coll("dist.psum", g, 0, n.root - 1, n.size)} end,
    jvp = function(t, n) return coll("dist.broadcast", t[1], n.root - 1, 0, n.size) end,
  }

  ---------------------------------------------------------------- shape
  -- Complex values as their (re, im) pairs and back. Cotangents follow JAX's convention: the
  -- cotangent of z = x + iy is dL/dx - i dL/dy (the pairing Re(g dz) is bilinear), so each
  -- transpose conjugates, and grad of a real function of z is the conjugate of its steepest ascent.
  R.view_as_real = {
    vjp = function(g) return {hl.conj(core.view_as_complex(g))} end,
    jvp = function(t) return core.view_as_real(t[1]) end,
  }
  R.view_as_complex = {
    vjp = function(g) return {core.view_as_real(hl.conj(g))} end,
    jvp = function(t) return core.view_as_complex(t[1]) end,
  }
  R.reshape = {
    vjp = function(g, _, x) return {hl.reshape(g, x[1].shape)} end,
    jvp = function(t, n) return hl.reshape(t[1], n.shape) end,
  }
  R.transpose = {
    vjp = function(g, n)
      local inv = {}
      for k, p in ipairs(n.perm) do inv[p] = k end
      return {hl.transpose(g, inv)}
    end,
    jvp = function(t, n) return hl.transpose(t[1], n.perm) end,
  }
  R.broadcast_to = {
    vjp = function(g, _, x) return {unbroadcast(g, x[1].shape)} end,
    jvp = function(t, n) return hl.broadcast_to(t[1], n.shape) end,
  }

  -- the transpose of a slice: g placed at the sliced positions of a zero array of `shape`
  local function unslice(g, shape, start, step)
    local y = g
    for d = 1, #shape do
      local n_out, n_in, s, k = y.shape[d], shape[d], start[d], step[d]
      if n_out == 0 then return zeros(shape, g.dtype, g) end
      if not (n_out == n_in and k == 1) then
        local ys = y.shape
        if k < 0 then
          -- reversed: read backwards, then it is a forward slice from the last element taken
          local starts, steps = {}, {}
          for i = 1, #ys do starts[i], steps[i] = 0, 1 end
          starts[d], steps[d] = n_out - 1, -1
          y = core.slice(y, starts, steps, ys)
          s, k = s + (n_out - 1) * k, -k
        end
        if k > 1 then
          -- interleave k-1 zeros after each element, then drop the trailing ones
          local spread = {}
          for i = 1, d do spread[i] = ys[i] end
          spread[d + 1] = 1
          for i = d + 1, #ys do spread[i + 1] = ys[i] end
          local zshape = {}
          for i, v in ipairs(spread) do zshape[i] = v end
          zshape[d + 1] = k - 1
          local wide = hl.concatenate({hl.reshape(y, spread), zeros(zshape, g.dtype, g)}, d + 1)
          local flat = {}
          for i = 1, #ys do flat[i] = ys[i] end
          flat[d] = n_out * k
          y = hl.reshape(wide, flat)
          local starts, steps, counts = {}, {}, {}
          for i = 1, #ys do starts[i], steps[i], counts[i] = 0, 1, flat[i] end
          counts[d] = (n_out - 1) * k + 1
          y = core.slice(y, starts, steps, counts)
        end
        -- zeros before and after
        local parts = {}
        local len = y.shape[d]
        local before, after = s, n_in - s - len
        local function pad(m)
          local zs = y.shape
          zs[d] = m
          return zeros(zs, g.dtype, g)
        end
        if before > 0 then parts[#parts + 1] = pad(before) end
        parts[#parts + 1] = y
        if after > 0 then parts[#parts + 1] = pad(after) end
        if #parts > 1 then y = hl.concatenate(parts, d) end
      end
    end
    return y
  end
  R.unslice = unslice
  R.slice = {
    vjp = function(g, n, x) return {unslice(g, x[1].shape, n.start, n.step)} end,
    jvp = function(t, n) return core.slice(t[1], n.start, n.step, n.shape) end,
  }
  R.concatenate = {
    vjp = function(g, n, x)
      local cts, at = {}, 0
      local gs = g.shape
      for k = 1, #n.ins do
        local len = x[k].shape[n.axis]
        local starts, steps, counts = {}, {}, {}
        for i = 1, #gs do starts[i], steps[i], counts[i] = 0, 1, gs[i] end
        starts[n.axis], counts[n.axis] = at, len
        cts[k] = core.slice(g, starts, steps, counts)
        at = at + len
      end
      return cts
    end,
    jvp = function(t, n, x)
      local parts = {}
      for k = 1, #n.ins do parts[k] = t[k] or zeros(x[k].shape, n.dtype, x[k]) end
      return hl.concatenate(parts, n.axis)
    end,
  }
  -- gather and scatter_add are each other's transpose; the indices get no cotangent
  R.gather = {
    vjp = function(g, n, x) return {core.scatter_add(g, x[2], n.axis - 1, x[1].shape[n.axis])} end,
    jvp = function(t, n, x) return core.gather(t[1], x[2], n.axis - 1) end,
  }
  R.scatter_add = {
    vjp = function(g, n, x) return {core.gather(g, x[2], n.axis - 1)} end,
    jvp = function(t, n, x) return core.scatter_add(t[1], x[2], n.axis - 1, n.shape[n.axis]) end,
  }
  -- scatter (operand, updates, indices; a combine mode): JAX's rules. The operand's cotangent
  -- passes where it survives, the updates' is gathered from the positions they reached: add passes
  -- everything; set zeroes the written positions, and of duplicate writes only the last (the one
  -- that won) gets a cotangent; mul scales by the other factors; min/max go through the winners,
  -- ties sharing evenly. The indices get no cotangent.
  local function scatter_parts(n, x)
    local u, idx, ax = x[2], x[3], n.axis - 1
    -- an index-shaped array laid out to broadcast against the updates (pre..., I..., post...)
    local function along(a)
      local s = {}
      for d = 1, u.ndim do s[d] = 1 end
      for d = 1, idx.ndim do s[ax + d] = idx.shape[d] end
      return hl.reshape(a, s)
    end
    local valid = along(hl.logical_and(hl.ge(idx, 0), hl.lt(idx, n.shape[n.axis])))
    local function sc(base, upd, mode) return core.scatter(base, as(upd, base.dtype), idx, ax, mode) end
    local function gat(v) return core.gather(v, idx, ax) end
    return u, idx, ax, along, valid, sc, gat
  end
  -- mul: for each update, the product of the other updates reaching its target (exact with zeros:
  -- the nonzero factors' product, and how many factors were zero)
  local function others(n, x)
    local u, _, _, _, valid, sc, gat = scatter_parts(n, x)
    local safe = hl.where(hl.eq(u, 0), 1, u)
    local zero = hl.logical_and(hl.eq(u, 0), valid)
    local prod = gat(sc(hl.ones_like(x[1]), safe, "mul"))
    local nzero = gat(sc(hl.zeros_like(x[1]), zero, "add"))
    return hl.where(zero, hl.where(hl.eq(nzero, 1), prod, 0), hl.where(hl.eq(nzero, 0), prod / safe, 0))
  end
  -- min/max: which operand positions and updates equal the result, and how many tie there
  local function winners(n, x, z)
    local u, _, _, _, valid, sc, gat = scatter_parts(n, x)
    local wu = as(hl.logical_and(hl.eq(u, gat(z)), valid), n.dtype)
    local wx = as(hl.eq(x[1], z), n.dtype)
    local count = wx + sc(hl.zeros_like(z), wu, "add")
    return wx, wu, hl.where(hl.eq(count, 0), 1, count)
  end
  R.scatter = {
    vjp = function(g, n, x, z)
      local u, idx, ax, along, _, sc, gat = scatter_parts(n, x)
      if n.mode == "add" then return {g, gat(g)} end
      if n.mode == "set" then
        -- the update that won each target: scatter each update's position, read it back
        local count = 1
        for d = 1, idx.ndim do count = count * idx.shape[d] end
        local ids = hl.broadcast_to(along(hl.reshape(hl.arange(count, "int32"), idx.shape)), u.shape)
        local won = hl.eq(gat(core.scatter(hl.fill_like(x[1], -1, nil, "int32"), ids, idx, ax, "set")), ids)
        return {sc(g, hl.zeros_like(u), "set"), hl.where(won, gat(g), 0)}
      end
      if n.mode == "mul" then return {sc(g, u, "mul"), gat(g * x[1]) * others(n, x)} end
      local wx, wu, count = winners(n, x, z)
      local gn = g / count
      return {gn * wx, gat(gn) * wu}
    end,
    jvp = function(t, n, x, z)
      local u, _, _, _, _, sc = scatter_parts(n, x)
      local tx, tu = t[1] or zeros(x[1].shape, n.dtype, x[1]), t[2] or zeros(u.shape, n.dtype, u)
      if n.mode == "add" or n.mode == "set" then return sc(tx, tu, n.mode) end
      if n.mode == "mul" then return sc(tx, u, "mul") + x[1] * sc(hl.zeros_like(z), tu * others(n, x), "add") end
      local wx, wu, count = winners(n, x, z)
      return (tx * wx + sc(hl.zeros_like(z), tu * wu, "add")) / count
    end,
  }
  -- (compiled loops register their own entry, derivative and batching rules together, through
  -- R.define: control.lua)

  ---------------------------------------------------------------- batching rules (hl.vmap)
  -- batch(n, x, b, size) -> value, batched: x are the node's inputs, b[k] tells whether x[k]
  -- carries the batch as a new leading axis (of extent size); the node's attributes (n) are those
  -- of one example. A rule returns its result with the batch leading, or unbatched.
  local prims, kinds = core.prim_names()
  local function shift(list, by)
    local out = {}
    for i, v in ipairs(list) do out[i] = v + by end
    return out
  end
  local function with_batch(size, shape)
    local s = {size}
    for i, e in ipairs(shape) do s[i + 1] = e end
    return s
  end
  -- an unbatched input brought to the batched shape
  local function lift(v, batched, size)
    if batched then return v end
    return hl.broadcast_to(hl.reshape(v, with_batch(1, v.shape)), with_batch(size, v.shape))
  end
  -- bitmask of 0-based axes from the node's 1-based axes, the batch axis first
  local function mask(axes, by)
    local m = 0
    for _, a in ipairs(axes) do m = m + 2 ^ (a - 1 + by) end
    return m
  end

  -- elementwise: inputs of one example share a shape, so a batched input (B, s...) broadcasts
  -- against an unbatched one (s...) by NumPy's trailing alignment
  local P = core.prims
  local function elementwise(n, x, b)
    local any = false
    for k = 1, #n.ins do any = any or b[k] end
    local r
    if n.op == "cast" then r = core.cast(x[1], n.dtype)
    else r = P[n.op](unpack(x, 1, #n.ins)) end
    return r, any
  end
  for _, name in ipairs(prims) do
    if kinds[name] == "elemwise" then R[name].batch = elementwise end
  end

  local function unbatched_source(n) error("halua: internal: vmap replays " .. n.op .. " nodes itself", 0) end
  R.param.batch, R.const.batch, R.iota.batch = unbatched_source, unbatched_source, unbatched_source

  local function reduction(n, x, b) return P[n.op](x[1], mask(n.axes, b[1] and 1 or 0)), b[1] end
  for _, name in ipairs {"sum", "prod", "max", "min", "argmax", "argmin"} do R[name].batch = reduction end

  R.matmul.batch = function(_, x, b, size)
    -- one example's operands have equal ranks; a batched one gets the other's batch too
    if b[1] ~= b[2] then x = {lift(x[1], b[1], size), lift(x[2], b[2], size)} end
    return core.matmul(x[1], x[2]), b[1] or b[2]
  end
  -- the pairs' axis is the last: a leading batch axis stays where it is
  R.view_as_real.batch = function(_, x, b) return core.view_as_real(x[1]), b[1] end
  R.view_as_complex.batch = function(_, x, b) return core.view_as_complex(x[1]), b[1] end
  R.reshape.batch = function(n, x, b, size)
    return core.reshape(x[1], b[1] and with_batch(size, n.shape) or n.shape), b[1]
  end
  R.transpose.batch = function(n, x, b)
    if not b[1] then return core.transpose(x[1], shift(n.perm, -1)), false end
    local p = {0}
    for i, a in ipairs(n.perm) do p[i + 1] = a end
    return core.transpose(x[1], p), true
  end
  R.broadcast_to.batch = function(n, x, b, size)
    if not b[1] then return core.broadcast_to(x[1], n.shape), false end
    -- (B, s...) to (B, target...): the example's axes aligned on the right, below the batch
    local s, lead = x[1].shape, #n.shape - (x[1].ndim - 1)
    local r = {size}
    for _ = 1, lead do r[#r + 1] = 1 end
    for i = 2, #s do r[#r + 1] = s[i] end
    return core.broadcast_to(core.reshape(x[1], r), with_batch(size, n.shape)), true
  end
  R.slice.batch = function(n, x, b, size)
    if not b[1] then return core.slice(x[1], n.start, n.step, n.shape), false end
    return core.slice(x[1], with_batch(0, n.start), with_batch(1, n.step), with_batch(size, n.shape)), true
  end
  R.concatenate.batch = function(n, x, b, size)
    local any = false
    for k = 1, #n.ins do any = any or b[k] end
    local list = {}
    for k = 1, #n.ins do list[k] = any and lift(x[k], b[k], size) or x[k] end
    return core.concatenate(list, n.axis - 1 + (any and 1 or 0)), any
  end

  -- gather with batched indices reads each example's own row: the batch and the gathered axis
  -- are flattened into one axis, and each example's indices offset by its row
  local function moved_to_front(v, from)   -- axis `from` (0-based) brought right after the batch
    local p = {0, from}
    for d = 1, v.ndim - 1 do if d ~= from then p[#p + 1] = d end end
    return core.transpose(v, p), p
  end
  local function offsets(idx, size, per, ndim)   -- example i's offset i * per, shaped to idx
    local shape = {size}
    for _ = 2, ndim do shape[#shape + 1] = 1 end
    local o = hl.reshape(hl.arange(size, idx.dtype) * per, shape)
    if not core.is_tracer(idx) and not core.is_tracer(o) and o.device ~= idx.device then o = o:to(idx.device) end
    return o
  end
  R.gather.batch = function(n, x, b, size)
    local v, idx, ax = x[1], x[2], n.axis - 1
    if not b[2] then return core.gather(v, idx, ax + (b[1] and 1 or 0)), b[1] end
    if idx.dtype == "uint8" or idx.dtype == "int8" then idx = idx:astype("int32") end
    v = lift(v, b[1], size)
    local len = v.shape[ax + 2]
    -- v (B, pre..., len, post...) -> (B, len, pre..., post...) -> (B * len, pre..., post...)
    local front = moved_to_front(v, ax + 1)
    local fs = front.shape
    local flat_shape = {size * len}
    for d = 3, #fs do flat_shape[#flat_shape + 1] = fs[d] end
    local flat = core.reshape(front, flat_shape)
    local valid = hl.logical_and(hl.ge(idx, 0), hl.lt(idx, len))
    local lin = hl.where(valid, idx + offsets(idx, size, len, idx.ndim), -1)
    local r = core.gather(flat, lin, 0)             -- (B, I..., pre..., post...)
    -- back to (B, pre..., I..., post...)
    local ni, npre = idx.ndim - 1, ax
    local p = {0}
    for d = 1, npre do p[#p + 1] = ni + d end
    for d = 1, ni do p[#p + 1] = d end
    for d = ni + npre + 1, r.ndim - 1 do p[#p + 1] = d end
    return core.transpose(r, p), true
  end
  -- what the batched scatters share: the updates (B, pre..., I..., post...) with their index axes
  -- first, (B, I..., pre..., post...); each example's indices as rows of one (B * len)-long axis
  -- (out-of-range ones -1: dropped); and the result's len axis back in place,
  -- (B, len, pre..., post...) -> (B, pre..., len, post...)
  local function index_axes_first(u, ni, npre)
    local p = {0}
    for d = 1, ni do p[#p + 1] = npre + d end
    for d = 1, npre do p[#p + 1] = d end
    for d = npre + ni + 1, u.ndim - 1 do p[#p + 1] = d end
    return core.transpose(u, p)
  end
  local function batched_rows(idx, size, len)
    local valid = hl.logical_and(hl.ge(idx, 0), hl.lt(idx, len))
    return hl.where(valid, idx + offsets(idx, size, len, idx.ndim), -1)
  end
  local function len_axis_back(r, npre)
    local q = {0}
    for d = 1, npre do q[#q + 1] = d + 1 end
    q[#q + 1] = 1
    for d = npre + 2, r.ndim - 1 do q[#q + 1] = d end
    return core.transpose(r, q)
  end
  R.scatter_add.batch = function(n, x, b, size)
    local v, idx, ax, len = x[1], x[2], n.axis - 1, n.shape[n.axis]
    if not b[2] then return core.scatter_add(v, idx, ax + (b[1] and 1 or 0), len), b[1] end
    if idx.dtype == "uint8" or idx.dtype == "int8" then idx = idx:astype("int32") end
    v = lift(v, b[1], size)
    -- v's index axes first, scattered into B * len rows
    local npre = ax
    local r = core.scatter_add(index_axes_first(v, idx.ndim - 1, npre), batched_rows(idx, size, len), 0, size * len)
    local rs = {size, len}
    for d = 2, r.ndim do rs[#rs + 1] = r.shape[d] end
    return len_axis_back(core.reshape(r, rs), npre), true   -- from (B, len, pre..., post...)
  end
  -- scatter: unbatched indices scatter along the axis one to the right; batched ones are offset by
  -- their example's row of a (B * len)-long axis, as scatter_add's are
  R.scatter.batch = function(n, x, b, size)
    local op, u, idx, ax, len = x[1], x[2], x[3], n.axis - 1, n.shape[n.axis]
    if not (b[1] or b[2] or b[3]) then return core.scatter(op, u, idx, ax, n.mode), false end
    op, u = lift(op, b[1], size), lift(u, b[2], size)
    if not b[3] then return core.scatter(op, u, idx, ax + 1, n.mode), true end
    if idx.dtype == "uint8" or idx.dtype == "int8" then idx = idx:astype("int32") end
    local npre = ax
    -- operand (B, pre..., len, post...) -> (B, len, pre..., post...) -> (B * len, pre..., post...)
    local front = moved_to_front(op, ax + 1)
    local fs = front.shape
    local flat_shape = {size * len}
    for d = 3, #fs do flat_shape[#flat_shape + 1] = fs[d] end
    local r = core.scatter(core.reshape(front, flat_shape), index_axes_first(u, idx.ndim - 1, npre),
                           batched_rows(idx, size, len), 0, n.mode)
    return len_axis_back(core.reshape(r, fs), npre), true   -- from (B, len, pre..., post...)
  end
  -- hl.linalg's primitives work on leading batch axes already: a batched operand's new axis is
  -- one more (the other operand gets it too); sort's axis moves one place right
  R["linalg.solve"].batch = function(_, x, b, size)
    if b[1] ~= b[2] then x = {lift(x[1], b[1], size), lift(x[2], b[2], size)} end
    return core.linalg_solve(x[1], x[2]), b[1] or b[2]
  end
  R["linalg.cholesky"].batch = function(_, x, b) return core.linalg_cholesky(x[1]), b[1] end
  R["linalg.solve_triangular"].batch = function(n, x, b, size)
    if b[1] ~= b[2] then x = {lift(x[1], b[1], size), lift(x[2], b[2], size)} end
    return core.linalg_solve_triangular(x[1], x[2], n.mode), b[1] or b[2]
  end
  for _, name in ipairs({"linalg.qr", "linalg.svd", "linalg.eigh", "linalg.slogdet"}) do
    R[name].batch = function(n, x, b) return core.linalg_decomp(name, x[1], n.mode), b[1] end
  end
  R.sort.batch = function(n, x, b) return core.sort(x[1], n.axis - 1 + (b[1] and 1 or 0), false), b[1] end
  R.argsort.batch = function(n, x, b) return core.sort(x[1], n.axis - 1 + (b[1] and 1 or 0), true), b[1] end
  R["fft.forward"].batch = function(n, x, b) return core.fft(x[1], n.axis - 1 + (b[1] and 1 or 0), false), b[1] end
  R["fft.backward"].batch = function(n, x, b) return core.fft(x[1], n.axis - 1 + (b[1] and 1 or 0), true), b[1] end
  R["fft.real"].batch = function(n, x, b) return core.fft(x[1], n.axis - 1 + (b[1] and 1 or 0), "real"), b[1] end
  R["fft.real_inverse"].batch = function(n, x, b)
    return core.fft(x[1], n.axis - 1 + (b[1] and 1 or 0), "real_inverse", n.n), b[1]
  end

  -- collectives: elementwise ones keep the batch axis (the front); the others' axes move one right
  for _, name in ipairs({"dist.psum", "dist.pmax", "dist.pmin"}) do
    R[name].batch = function(n, x, b) return core.dist(name, x[1], 0, n.root - 1, n.size), b[1] end
  end
  R["dist.broadcast"].batch = function(n, x, b) return core.dist("dist.broadcast", x[1], n.root - 1, 0, n.size), b[1] end
  R["dist.ppermute"].batch = function(n, x, b)
    return core.dist("dist.ppermute", x[1], n.send_to - 1, n.recv_from - 1, n.size), b[1]
  end
  for _, name in ipairs({"dist.all_gather", "dist.reduce_scatter"}) do
    R[name].batch = function(n, x, b) return core.dist(name, x[1], n.axis - 1 + (b[1] and 1 or 0), 0, n.size), b[1] end
  end
  R["dist.all_to_all"].batch = function(n, x, b)
    local by = b[1] and 1 or 0
    return core.dist("dist.all_to_all", x[1], n.axis - 1 + by, n.axis2 - 1 + by, n.size), b[1]
  end

  -- A primitive's rules from outside this file (the compiled loops' node, control.lua): fields
  -- vjp, jvp, deriv, zero, nondiff and batch, merged into the primitive's entry.
  local known = {vjp = true, jvp = true, deriv = true, zero = true, nondiff = true, batch = true}
  function R.define(name, fields)
    local entry = rawget(R, name) or {}
    for k, v in pairs(fields) do
      if not known[k] then error("halua: rules.define: unknown field '" .. tostring(k) .. "' for " .. name, 2) end
      entry[k] = v
    end
    R[name] = entry
    return entry
  end
  return R
end
