-- hl.random: counter-based random numbers. A key is an int64 array of two 32-bit words; bits
-- come from Threefry-2x32 (20 rounds, Salmon et al. 2011, as JAX uses) computed with ordinary
-- array ops, so they are the same eagerly, under jit and on every device, and `split` and
-- `fold_in` are pure. The 32-bit words live in int64 arrays: every sum is taken modulo 2^32
-- with a mask, so no operation depends on integer overflow.
return function(hl, core, shared)
  local util = require "halua.util"
  local symdim = require "halua.symdim"
  local R = {}
  local fail = util.fail
  local is_array = core.is_array

  local MASK = 0xFFFFFFFF
  local band, bor, bxor = hl.bitwise_and, hl.bitwise_or, hl.bitwise_xor
  local shl, shr = hl.left_shift, hl.right_shift

  -- Threefry-2x32 of the counter pairs (x0[i], x1[i]) under key (k0, k1): one primitive (its
  -- rounds are lowered in engine/backend/hl_lower.cpp) that packs the two result words
  local threefry_prim = core.prims.threefry2x32
  local function threefry(k0, k1, x0, x1)
    local p = threefry_prim(k0, k1, x0, x1)
    return band(shr(p, 32), MASK), band(p, MASK)
  end
  R.threefry2x32 = function(key, x0, x1)
    local k = R.check_key("threefry2x32", key)
    return threefry(k[1], k[2], hl.asarray(x0, "int64"), hl.asarray(x1, "int64"))
  end

  function R.check_key(op, key)
    if not is_array(key) or key.dtype ~= "int64" or key.ndim ~= 1 or key.shape[1] ~= 2 then
      local what = is_array(key) and (key.dtype .. "[" .. table.concat(key.shape, ",") .. "]") or type(key)
      fail("random.%s: expected a key (an int64[2] array from hl.random.key or split), got %s", op, what)
    end
    return {key[1], key[2], device = not core.is_tracer(key) and key.device or nil}
  end
  -- arrays the functions make (counters, empty results) live where a concrete key does
  local function on(k, x) return k.device and x.device ~= k.device and x:to(k.device) or x end

  -- n 32-bit words (int64 array of shape {n}) for this key, as JAX orders them: the counters
  -- 0..n-1 (padded to even) are split into halves that form the pairs
  local function bits(k, n)
    local half = math.ceil(n / 2)
    if half == 0 then return on(k, hl.zeros({0}, "int64")) end
    -- (under jit the counters are an index of the key's trace, not a captured array: a big one
    -- costs nothing to keep, and its size may be a polymorphic program's dynamic size)
    local x0 = core.is_tracer(k[1]) and core.iota("int64", {half}, 0, k[1]) or on(k, hl.arange(half, "int64"))
    local x1 = x0 + half
    local y0, y1 = threefry(k[1], k[2], x0, x1)
    local all = hl.concatenate({y0, y1}, 1)
    if 2 * half ~= n then all = all[{{1, n}}] end
    return all
  end

  local function shape_of(op, shape)
    shape = symdim.concrete(shape)   -- (hl.jit's dynamic sizes: their traced values)
    if type(shape) == "number" then shape = {shape} end
    if type(shape) ~= "table" then fail("random.%s: shape must be a table of extents or a number, got %s", op, type(shape)) end
    local n = 1
    for i, s in ipairs(shape) do
      if type(s) ~= "number" or s < 0 or s ~= math.floor(s) then
        fail("random.%s: shape entry %d must be a non-negative integer, got %s", op, i, tostring(s))
      end
      n = n * s
    end
    return shape, n
  end

  function R.key(seed)
    if type(seed) ~= "number" or seed ~= math.floor(seed) or math.abs(seed) >= 2 ^ 53 then
      fail("random.key: the seed must be an integer number below 2^53, got %s", tostring(seed))
    end
    if seed < 0 then seed = seed + 2 ^ 64 end   -- as a 64-bit two's complement word pair
    local hi = math.floor(seed / 2 ^ 32) % 2 ^ 32
    local lo = seed % 2 ^ 32
    return hl.array({hi, lo}, "int64")
  end

  function R.split(key, n)
    local k = R.check_key("split", key)
    n = n or 2
    if type(n) ~= "number" or n < 1 or n ~= math.floor(n) then fail("random.split: n must be a positive integer, got %s", tostring(n)) end
    return hl.reshape(bits(k, 2 * n), {n, 2})
  end

  function R.fold_in(key, data)
    local k = R.check_key("fold_in", key)
    if type(data) == "number" then
      if data ~= math.floor(data) then fail("random.fold_in: data must be an integer, got %s", tostring(data)) end
      data = on(k, hl.array(data % 2 ^ 32, "int64"))
    elseif is_array(data) then
      data = band(hl.astype(data, "int64"), MASK)
    else
      fail("random.fold_in: data must be an integer or an integer array, got %s", type(data))
    end
    local y0, y1 = threefry(k[1], k[2], on(k, hl.zeros({}, "int64")), data)
    return hl.stack and hl.stack({y0, y1}) or hl.concatenate({hl.reshape(y0, {1}), hl.reshape(y1, {1})}, 1)
  end

  -- the raw 32-bit words, shaped
  function R.bits(key, shape)
    local k = R.check_key("bits", key)
    local s, n = shape_of("bits", shape)
    return hl.reshape(bits(k, n), s)
  end

  local function check_float(op, dtype)
    dtype = dtype or "float32"
    if dtype ~= "float32" and dtype ~= "float64" and dtype ~= "float16" and dtype ~= "bfloat16" then
      fail("random.%s: dtype must be float32, float64, float16 or bfloat16, got %s", op, tostring(dtype))
    end
    return dtype
  end

  -- significand bits of the 2-byte floats: that many random bits make every value exact below 1
  local HALF_BITS = {float16 = 11, bfloat16 = 8}

  -- uniform on [0, 1): 24 random bits for float32, 53 for float64, 11 for float16, 8 for
  -- bfloat16 (every value exactly representable)
  local function unit(k, n, dtype)
    if dtype == "float32" then
      return hl.astype(shr(bits(k, n), 8), "float32") * 2 ^ -24
    end
    if HALF_BITS[dtype] then
      local p = HALF_BITS[dtype]
      return (hl.astype(shr(bits(k, n), 32 - p), "float32") * 2 ^ -p):astype(dtype)
    end
    local w = bits(k, 2 * n)
    local hi, lo = w[{{1, n}}], w[{{n + 1, 2 * n}}]
    local m = bor(shl(shr(hi, 5), 26), shr(lo, 6))
    return hl.astype(m, "float64") * 2 ^ -53
  end

  function R.uniform(key, shape, dtype, lo, hi)
    if type(dtype) == "number" then dtype, lo, hi = nil, dtype, lo end
    local k = R.check_key("uniform", key)
    local s, n = shape_of("uniform", shape)
    dtype = check_float("uniform", dtype)
    lo, hi = lo or 0, hi or 1
    local u = hl.reshape(unit(k, n, dtype), s)
    if lo == 0 and hi == 1 then return u end
    return u * (hi - lo) + lo
  end

  -- Box-Muller: sqrt(-2 log u1) cos(2 pi u2) with u1 in (0, 1]: exact in distribution
  function R.normal(key, shape, dtype)
    local k = R.check_key("normal", key)
    local s, n = shape_of("normal", shape)
    dtype = check_float("normal", dtype)
    if HALF_BITS[dtype] then return R.normal(key, shape, "float32"):astype(dtype) end   -- drawn in float32, rounded
    local u = unit(k, 2 * n, dtype)
    if n == 0 then return on(k, hl.zeros(s, dtype)) end
    local u1, u2 = 1 - u[{{1, n}}], u[{{n + 1, 2 * n}}]
    return hl.reshape(hl.sqrt(-2 * hl.log(u1)) * hl.cos(2 * math.pi * u2), s)
  end

  function R.bernoulli(key, p, shape)
    local k = R.check_key("bernoulli", key)
    if p == nil then p = 0.5 end
    if shape == nil then shape = is_array(p) and p.shape or {} end
    local s, n = shape_of("bernoulli", shape)
    local dtype = is_array(p) and p.dtype == "float64" and "float64" or "float32"
    return hl.lt(hl.reshape(unit(k, n, dtype), s), p)
  end

  function R.randint(key, shape, lo, hi, dtype)
    local k = R.check_key("randint", key)
    local s, n = shape_of("randint", shape)
    if type(lo) ~= "number" or type(hi) ~= "number" or lo ~= math.floor(lo) or hi ~= math.floor(hi) then
      fail("random.randint: lo and hi must be integers (hi excluded)")
    end
    if hi <= lo then fail("random.randint: hi (%d) must be greater than lo (%d)", hi, lo) end
    dtype = dtype or "int32"
    -- 53 uniform bits scaled: the bias is below (hi - lo) / 2^53
    local r = hl.floor(unit(k, n, "float64") * (hi - lo))
    return hl.reshape(hl.astype(hl.minimum(r, hi - lo - 1) + lo, dtype), s)
  end

  -- Gumbel-max: the argmax of logits + Gumbel noise is a sample of softmax(logits); 1-based.
  -- With shape, the samples have that shape: logits's batch shape (without axis) broadcast to it.
  function R.categorical(key, logits, axis, shape)
    local k = R.check_key("categorical", key)
    if not core.usable(logits, "random.categorical") then fail("random.categorical: logits must be an array, got %s", type(logits)) end
    axis = axis or -1
    if logits.ndim == 0 then fail("random.categorical: logits must have an axis of categories, got a 0-d array") end
    if type(axis) ~= "number" or axis == 0 or axis ~= math.floor(axis) or math.abs(axis) > logits.ndim then
      fail("random.categorical: axis %s is out of range for logits of shape %s", tostring(axis), util.shape_str(logits.shape))
    end
    local a = axis < 0 and logits.ndim + 1 + axis or axis
    if logits.shape[a] == 0 then
      fail("random.categorical: logits of shape %s have no categories along axis %d", util.shape_str(logits.shape), a)
    end
    local dtype = logits.dtype == "float64" and "float64" or "float32"
    -- u strictly inside (0, 1): the middle of each of 2^24 cells
    local function gumbel(s, n) return -hl.log(-hl.log(hl.reshape((hl.astype(shr(bits(k, n), 8), dtype) + 0.5) * 2 ^ -24, s))) end
    if shape == nil then return hl.argmax(logits + gumbel(logits.shape, logits.size), axis) end
    -- the categories last, the batch broadcast to shape: one noise word per (sample, category)
    local s, n = shape_of("categorical", shape)
    local perm = {}
    for i = 1, logits.ndim do if i ~= a then perm[#perm + 1] = i end end
    perm[#perm + 1] = a
    local lg = hl.transpose(logits, perm)
    local ncat = lg.shape[lg.ndim]
    local full = {}
    for i, e in ipairs(s) do full[i] = e end
    full[#full + 1] = ncat
    if #full < lg.ndim then
      fail("random.categorical: shape %s has fewer axes than the batch shape of logits %s (logits without axis %d)",
           util.shape_str(s), util.shape_str(logits.shape), a)
    end
    local ok, b = pcall(hl.broadcast_to, lg, full)
    if not ok then
      fail("random.categorical: the batch shape of logits %s (without axis %d) does not broadcast to shape %s",
           util.shape_str(logits.shape), a, util.shape_str(s))
    end
    return hl.argmax(b + gumbel(full, n * ncat), -1)
  end

  -- a random permutation of 1..n: the positions sorted by n random words (ties by position);
  -- of an array: its entries along axis (default 1) in that order
  function R.permutation(key, n, axis)
    local k = R.check_key("permutation", key)
    if is_array(n) then
      local x = n
      if x.ndim == 0 then fail("random.permutation: a 0-d array has no axis to shuffle; give n or an array with an axis") end
      axis = axis or 1
      if type(axis) ~= "number" or axis == 0 or axis ~= math.floor(axis) or math.abs(axis) > x.ndim then
        fail("random.permutation: axis %s is out of range for an array of shape %s", tostring(axis), util.shape_str(x.shape))
      end
      local a = axis < 0 and x.ndim + 1 + axis or axis
      return hl.take(x, R.permutation(key, x.shape[a]), a)
    end
    if type(n) ~= "number" or n < 0 or n ~= math.floor(n) then fail("random.permutation: n must be a non-negative integer, got %s", tostring(n)) end
    if axis ~= nil then
      fail("random.permutation: permutation(key, n) takes no third argument (an axis is for an array: permutation(key, x, axis)), got %s",
           type(axis) == "table" and "a table" or tostring(axis))
    end
    if n == 0 then return on(k, hl.zeros({0}, "int64")) end
    -- the positions in the order of their words, ties by position: a stable argsort, O(n log n)
    -- (the same permutation as ranking each word among all n, without the n x n comparisons)
    return hl.argsort(bits(k, n))
  end

  -- the samplers built on these (choice, gamma, beta, dirichlet, truncated_normal, poisson)
  require("halua.random_dists")(hl, core, R, {unit = unit, bits = bits, shape_of = shape_of, check_float = check_float, on = on,
                                             named = shared and shared.named, ad = shared and shared.ad})
  return R
end
