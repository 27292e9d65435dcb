-- hl.nn: activations, dropout, losses and initialisers (convolution and pooling: nn_conv.lua;
-- normalisation, embedding, attention and recurrent cells: nn_layers.lua). All are
-- composites over the primitives, so they trace into one pipeline under jit and differentiate
-- through the primitives' rules. (softmax and log_softmax live in init.lua with the core ops.)
-- u: init.lua's helpers {fail, as_array, named, methods}.
return function(hl, core, shared)
  local util = require "halua.util"
  local fail, as_array = util.fail, shared.as_array
  local is_array = core.is_array
  local nn = hl.nn

  local shape_str = util.shape_str
  local is_float = util.is_float

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

  for _, name in ipairs {"relu", "gelu", "sigmoid", "softplus", "silu", "dropout",
                         "cross_entropy", "mse"} do
    nn[name] = shared.named(name, nn[name])
  end
  nn.init.glorot = shared.named("nn.init.glorot", nn.init.glorot)
  nn.init.normal = shared.named("nn.init.normal", nn.init.normal)
  for _, name in ipairs {"relu", "gelu", "sigmoid", "softplus", "silu"} do shared.methods[name] = nn[name] end
end
