-- hl.nn: activations, convolution and pooling (NCHW), dropout, losses and initialisers. All are
-- composites over the primitives, so they trace into one pipeline under jit and differentiate
-- through the primitives' rules. (softmax and log_softmax live in init.lua with the core ops.)
-- u: init.lua's helpers {fail, as_array, named, methods}.
return function(hl, core, shared)
  local util = require "halua.util"
  local fail, as_array = util.fail, shared.as_array
  local is_array = core.is_array
  local nn = hl.nn

  local shape_str = util.shape_str
  local function is_pos_int(v) return type(v) == "number" and v == math.floor(v) and v >= 1 end
  local function is_float(d) return d == "float32" or d == "float64" or d == "float16" or d == "bfloat16" end

  ---------------------------------------------------------------- activations

  function nn.relu(x) return hl.maximum(as_array(x, "relu"), 0) end

  -- exact (erf) by default, as PyTorch; approximate = true uses the tanh form
  function nn.gelu(x, approximate)
    x = as_array(x, "gelu")
    if approximate then
      return 0.5 * x * (1 + hl.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x * x * x)))
    end
    return 0.5 * x * (1 + hl.erf(x * (1 / math.sqrt(2))))
  end

  -- through tanh: 1 / (1 + exp(-x)) overflows exp for large negative x and its gradient becomes
  -- inf * 0; tanh saturates cleanly and so does its derivative
  function nn.sigmoid(x)
    x = as_array(x, "sigmoid")
    return 0.5 * hl.tanh(0.5 * x) + 0.5
  end

  -- log(1 + exp(x)), smooth at every order: the form max(x, 0) + log1p(exp(-|x|)) avoids overflow
  -- too, but its kinks at 0 cancel only in the value and first derivative (its second derivative
  -- at 0 came out 0, not 1/4: Newton's method on a logistic loss started at w = 0 diverged).
  -- Past 36 the result is x to float64 precision, and exp(36) does not overflow float32.
  function nn.softplus(x)
    x = as_array(x, "softplus")
    return hl.where(hl.gt(x, 36), x, hl.log1p(hl.exp(hl.minimum(x, 36))))
  end

  function nn.silu(x)
    x = as_array(x, "silu")
    return x * nn.sigmoid(x)
  end

  ---------------------------------------------------------------- convolution and pooling

  -- a number or {h, w} -> h, w (positive, or non-negative where zero_ok)
  local function pair(op, what, v, zero_ok)
    if type(v) == "number" then v = {v, v} end
    local lo = zero_ok and 0 or 1
    if type(v) ~= "table" or #v ~= 2 then fail("%s: %s must be a number or {h, w}, got %s", op, what, tostring(v)) end
    for i = 1, 2 do
      if type(v[i]) ~= "number" or v[i] ~= math.floor(v[i]) or v[i] < lo then
        fail("%s: %s must be %s integers, got {%s}", op, what, zero_ok and "non-negative" or "positive",
             table.concat({tostring(v[1]), tostring(v[2])}, ", "))
      end
    end
    return v[1], v[2]
  end

  -- op's options table, of the names given (util.options); a list is not one
  local function opts_table(op, opts, names)
    if opts ~= nil and (type(opts) ~= "table" or is_array(opts)) then fail("%s: options must be a table, got %s", op, type(opts)) end
    return util.options(op, opts, names)
  end

  local function check_nchw(op, x)
    if x.ndim ~= 4 then fail("%s: input must be NCHW (4-D), got shape %s", op, shape_str(x.shape)) end
  end

  -- Where each window reads: for an h x w image, a (kh*kw, ho*wo) int32 array of positions in
  -- the flattened image (window offset (i, j) at row (i - 1) * kw + j), -1 where the window
  -- hangs over the padding. One gather of these positions is the whole im2col, and its transpose
  -- (the gradient) one scatter_add. Cached per geometry, as a host array.
  local window_cache = {}
  local function window_index(op, h, w, kh, kw, sh, sw, ph, pw)
    local ho, wo = math.floor((h + 2 * ph - kh) / sh) + 1, math.floor((w + 2 * pw - kw) / sw) + 1
    if h + 2 * ph < kh or w + 2 * pw < kw then
      fail("%s: the %dx%d window does not fit the %dx%d input padded by {%d, %d}", op, kh, kw, h, w, ph, pw)
    end
    local key = table.concat({h, w, kh, kw, sh, sw, ph, pw}, ",")
    local idx = window_cache[key]
    if not idx then
      local rows = {}
      for i = 0, kh - 1 do
        for j = 0, kw - 1 do
          local row = {}
          for oy = 0, ho - 1 do
            local y = oy * sh + i - ph
            for ox = 0, wo - 1 do
              local x = ox * sw + j - pw
              row[#row + 1] = (y >= 0 and y < h and x >= 0 and x < w) and y * w + x or -1
            end
          end
          rows[#rows + 1] = row
        end
      end
      idx = hl.array(rows, "int32")
      window_cache[key] = idx
    end
    return idx, ho, wo
  end

  -- x (N, C, H, W) -> (N, C, kh*kw, ho*wo): every window's elements, 0 in the padding
  local function windows(op, x, kh, kw, sh, sw, ph, pw)
    local s = x.shape
    local idx, ho, wo = window_index(op, s[3], s[4], kh, kw, sh, sw, ph, pw)
    if not core.is_tracer(x) and x.device ~= idx.device then idx = idx:to(x.device) end
    return core.gather(hl.reshape(x, {s[1], s[2], s[3] * s[4]}), idx, 2), ho, wo, idx
  end

  -- conv2d(x, w [, opts]): x (N, C, H, W), w (O, C, kh, kw); opts.bias (O), opts.stride,
  -- opts.padding (a number or {h, w}; zeros). Cross-correlation, as PyTorch and JAX compute it.
  -- Lowered as im2col: the windows become one (C*kh*kw, N*ho*wo) matrix and the convolution one
  -- matmul, the shape the engine's matmul schedule is fastest at.
  function nn.conv2d(x, w, opts)
    x, w = as_array(x, "conv2d", 1), as_array(w, "conv2d", 2)
    opts = opts_table("conv2d", opts, {"bias", "stride", "padding"})
    check_nchw("conv2d", x)
    if w.ndim ~= 4 then fail("conv2d: weights must be (out, in, kh, kw), got shape %s", shape_str(w.shape)) end
    local xs, ws = x.shape, w.shape
    if ws[2] ~= xs[2] then
      fail("conv2d: input has %d channels but weights %s expect %d", xs[2], shape_str(ws), ws[2])
    end
    local sh, sw = pair("conv2d", "stride", opts.stride or 1)
    local ph, pw = pair("conv2d", "padding", opts.padding or 0, true)
    local n, c, o, kh, kw = xs[1], xs[2], ws[1], ws[3], ws[4]
    local cols, ho, wo = windows("conv2d", x, kh, kw, sh, sw, ph, pw)      -- N, C, K, ho*wo
    cols = hl.reshape(hl.transpose(cols, {2, 3, 1, 4}), {c * kh * kw, n * ho * wo})
    local y = hl.matmul(hl.reshape(w, {o, c * kh * kw}), cols)               -- O, N*ho*wo
    y = hl.transpose(hl.reshape(y, {o, n, ho, wo}), {2, 1, 3, 4})
    if opts.bias ~= nil then
      local b = as_array(opts.bias, "conv2d")
      if b.ndim ~= 1 or b.shape[1] ~= o then
        fail("conv2d: bias must have shape [%d] (one per output channel), got %s", o, shape_str(b.shape))
      end
      y = y + hl.reshape(b, {o, 1, 1})
    end
    return y
  end

  -- the shared part of the pools: validate, then every window's elements (N, C, K, ho*wo) and
  -- the window positions (-1 in the padding)
  local function pool_windows(op, x, size, opts)
    opts = opts_table(op, opts, {"stride", "padding"})
    check_nchw(op, x)
    local kh, kw = pair(op, "size", size)
    local sh, sw = pair(op, "stride", opts.stride or {kh, kw})
    local ph, pw = pair(op, "padding", opts.padding or 0, true)
    if ph * 2 > kh or pw * 2 > kw then fail("%s: padding {%d, %d} is more than half the %dx%d window", op, ph, pw, kh, kw) end
    local vals, ho, wo, idx = windows(op, x, kh, kw, sh, sw, ph, pw)
    return vals, ho, wo, idx
  end

  -- max_pool2d(x, size [, opts]): opts.stride (default: the size), opts.padding (-inf)
  function nn.max_pool2d(x, size, opts)
    x = as_array(x, "max_pool2d")
    local padded = opts and opts.padding and opts.padding ~= 0
    if padded and not is_float(x.dtype) then
      fail("max_pool2d: padding needs a float input (it pads with -inf), got %s", x.dtype)
    end
    local vals, ho, wo, idx = pool_windows("max_pool2d", x, size, opts)
    if padded then vals = hl.where(hl.ge(idx, 0), vals, -math.huge) end
    local s = x.shape
    return hl.reshape(hl.max(vals, 3), {s[1], s[2], ho, wo})
  end

  -- avg_pool2d(x, size [, opts]): the padding zeros count in the average (PyTorch's default)
  function nn.avg_pool2d(x, size, opts)
    x = as_array(x, "avg_pool2d")
    if not is_float(x.dtype) then x = x:astype("float32") end
    local vals, ho, wo = pool_windows("avg_pool2d", x, size, opts)
    local s = x.shape
    return hl.reshape(hl.mean(vals, 3), {s[1], s[2], ho, wo})
  end

  ---------------------------------------------------------------- dropout

  -- dropout(key, x, rate): each element zeroed with probability rate, the rest scaled by
  -- 1 / (1 - rate) so the expectation is unchanged; rate 0 returns x
  function nn.dropout(key, x, rate)
    x = as_array(x, "dropout", 2)
    if type(rate) ~= "number" or rate < 0 or rate >= 1 then
      fail("dropout: rate must be a number in [0, 1), got %s", tostring(rate))
    end
    if rate == 0 then return x end
    local keep = hl.random.bernoulli(key, 1 - rate, x.shape)
    return hl.where(keep, x * (1 / (1 - rate)), 0)
  end

  ---------------------------------------------------------------- losses

  -- cross_entropy(logits, labels): the mean over examples of -log softmax(logits)[label]; classes
  -- along the last axis. labels: integer class indices (1-based) of logits' shape without the
  -- last axis, or a float array of logits' shape holding probabilities (e.g. one-hot rows).
  function nn.cross_entropy(logits, labels)
    logits = as_array(logits, "cross_entropy", 1)
    labels = as_array(labels, "cross_entropy", 2)
    if logits.ndim < 1 then fail("cross_entropy: logits must have a class axis, got a 0-d array") end
    if not is_float(logits.dtype) then logits = logits:astype("float32") end
    local ls, ys = logits.shape, labels.shape
    local classes = ls[#ls]
    local probs
    if labels.ndim == logits.ndim - 1 and not is_float(labels.dtype) and labels.dtype ~= "bool" then
      for i = 1, #ys do
        if ys[i] ~= ls[i] then
          fail("cross_entropy: labels %s do not match logits %s (one label per row of logits)", shape_str(ys), shape_str(ls))
        end
      end
      if not core.is_tracer(labels) and labels.size > 0 then
        local lo, hi = hl.min(labels):item(), hl.max(labels):item()
        if lo < 1 or hi > classes then
          fail("cross_entropy: label %d is out of range 1..%d (labels are 1-based)", lo < 1 and lo or hi, classes)
        end
      end
      probs = hl.one_hot(labels, classes, logits.dtype)
    elseif labels.ndim == logits.ndim and is_float(labels.dtype) then
      for i = 1, #ys do
        if ys[i] ~= ls[i] then
          fail("cross_entropy: probability labels %s must have the shape of logits %s", shape_str(ys), shape_str(ls))
        end
      end
      probs = labels:astype(logits.dtype)
    else
      fail("cross_entropy: labels must be integer class indices of shape %s or float probabilities of shape %s, got %s %s",
           shape_str({unpack(ls, 1, #ls - 1)}), shape_str(ls), labels.dtype, shape_str(ys))
    end
    local per_row = -hl.sum(probs * hl.nn.log_softmax(logits, -1), -1)
    if labels.ndim == logits.ndim - 1 and core.is_tracer(labels) then
      -- traced labels cannot be checked now: a row whose label is out of range has a NaN loss
      -- (one_hot would give it a zero row and a plausible, wrong loss), so the mean is NaN
      local valid = hl.logical_and(hl.ge(labels, 1), hl.le(labels, classes))
      per_row = hl.where(valid, per_row, 0 / 0)
    end
    return hl.mean(per_row)
  end

  -- mse(pred, target): the mean of the squared differences (broadcasting like any binary op)
  function nn.mse(pred, target)
    pred, target = as_array(pred, "mse", 1), as_array(target, "mse", 2)
    return hl.mean(hl.square(pred - target))
  end

  ---------------------------------------------------------------- initialisers

  nn.init = {}

  local function check_shape(op, shape)
    if type(shape) == "number" then shape = {shape} end
    if type(shape) ~= "table" or #shape == 0 then fail("%s: shape must be a non-empty table of extents", op) end
    for _, e in ipairs(shape) do
      if type(e) ~= "number" or e ~= math.floor(e) or e < 0 then fail("%s: shape %s has a bad extent", op, tostring(e)) end
    end
    return shape
  end

  -- fans: (in, out) for a matmul weight x @ w; (out, in, k...) for a convolution weight
  local function fans(shape)
    if #shape == 1 then return shape[1], shape[1] end
    if #shape == 2 then return shape[1], shape[2] end
    local receptive = 1
    for i = 3, #shape do receptive = receptive * shape[i] end
    return shape[2] * receptive, shape[1] * receptive
  end

  -- glorot(key, shape [, dtype]): uniform on +-sqrt(6 / (fan_in + fan_out)) (Glorot & Bengio 2010)
  function nn.init.glorot(key, shape, dtype)
    shape = check_shape("nn.init.glorot", shape)
    local fan_in, fan_out = fans(shape)
    local limit = math.sqrt(6 / math.max(fan_in + fan_out, 1))
    return hl.random.uniform(key, shape, dtype or "float32", -limit, limit)
  end

  -- normal(key, shape [, stddev = 0.01] [, dtype])
  function nn.init.normal(key, shape, stddev, dtype)
    shape = check_shape("nn.init.normal", shape)
    if type(stddev) == "string" then stddev, dtype = nil, stddev end
    stddev = stddev or 0.01
    if type(stddev) ~= "number" or stddev < 0 then fail("nn.init.normal: stddev must be a non-negative number, got %s", tostring(stddev)) end
    return hl.random.normal(key, shape, dtype or "float32") * stddev
  end

  for _, name in ipairs {"relu", "gelu", "sigmoid", "softplus", "silu", "conv2d", "max_pool2d", "avg_pool2d", "dropout",
                         "cross_entropy", "mse"} do
    nn[name] = shared.named(name, nn[name])
  end
  nn.init.glorot = shared.named("nn.init.glorot", nn.init.glorot)
  nn.init.normal = shared.named("nn.init.normal", nn.init.normal)
  for _, name in ipairs {"relu", "gelu", "sigmoid", "softplus", "silu"} do shared.methods[name] = nn[name] end
end
