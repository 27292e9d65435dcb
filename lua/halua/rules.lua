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
return function(hl, core)
  local R = {}

  local function swap_last(x)
    local perm = {}
    for i = 1, x.ndim do perm[i] = i end
    perm[x.ndim - 1], perm[x.ndim] = x.ndim, x.ndim - 1
    return hl.transpose(x, perm)
  end

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
    vjp = function(g, _, x) return {hl.astype(g, x[1].dtype)} end,
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

  ---------------------------------------------------------------- shape
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
  -- compiled loops are made only where no derivative is being taken (control.lua traces loops
  -- step by step under a transformation), so autodiff reaching one is a halua bug
  local function loop_error() error("halua: autodiff: a compiled loop was reached; loops under grad must be traced step by step", 0) end
  R.loop = {vjp = loop_error, jvp = loop_error}
  return R
end
