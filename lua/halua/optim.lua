-- hl.optim: optimisers as pure functions over pytrees of parameters, so a whole training step
-- (loss, gradient and update) traces into one jitted function:
--   local opt = hl.optim.adam(1e-3)
--   local state = opt.init(params)
--   params, state = opt.update(grads, state, params)
-- The state is a pytree of arrays (never Lua numbers, which jit would treat as static values and
-- recompile for at every step).
return function(hl, core, shared)
  local util = require "halua.util"
  local fail = util.fail
  local tree = hl.tree
  local optim = {}

  -- the learning rate: a positive number, or a schedule: a function of the step count (an int32
  -- array, 1 at the first update; traced under jit) returning the rate, e.g. optim.cosine_decay
  local function check_rate(op, lr)
    if type(lr) == "function" then return lr end
    if type(lr) ~= "number" or lr <= 0 or lr ~= lr then
      fail("%s: the learning rate must be a positive number or a function of the step, got %s", op, tostring(lr))
    end
    return function() return lr end
  end

  -- a rate (a Lua number, or a schedule's 0-d array) in a leaf's dtype
  local function in_dtype(rate, dtype)
    if type(rate) == "number" then return rate end
    return rate.dtype == dtype and rate or rate:astype(dtype)
  end

  local function check_coefficient(op, what, v, lo, hi)
    if type(v) ~= "number" or not (v >= lo and v < hi) then
      fail("%s: %s must be a number in [%g, %g), got %s", op, what, lo, hi, tostring(v))
    end
  end

  -- tree.map over (grads, state part, params) with this optimiser's name in structure errors
  local function map(op, f, ...)
    local ok, r = pcall(tree.map, f, ...)
    if ok then return r end
    local msg = tostring(r)
    if msg:find("different structure", 1, true) then
      fail("%s: grads, state and params must have the same tree structure (%s)", op, msg:gsub("^halua: [%w_.]+: ", ""))
    end
    -- an op inside the update (a gradient of another shape than its parameter) fails under the
    -- optimiser's name
    error((msg:gsub("^halua: [%w_.]+: ", "halua: " .. op .. ": ", 1)), 0)
  end

  local function zeros_like_tree(op, params)
    return map(op, function(p)
      if not core.is_array(p) then fail("%s: parameters must be arrays, got a %s", op, type(p)) end
      return hl.zeros_like(p)
    end, params)
  end

  -- sgd(lr [, momentum [, opts]]): p <- p - lr * v with v <- momentum * v + g (PyTorch's form);
  -- plain gradient descent without momentum. opts.nesterov: p <- p - lr * (g + momentum * v);
  -- opts.weight_decay: g + weight_decay * p in place of g (PyTorch's SGD)
  function optim.sgd(lr, momentum, opts, ...)
    if select("#", ...) > 0 then fail("optim.sgd: takes (lr [, momentum [, opts]])") end
    local rate = check_rate("optim.sgd", lr)
    if type(momentum) == "table" and opts == nil then momentum, opts = nil, momentum end
    if momentum ~= nil then check_coefficient("optim.sgd", "momentum", momentum, 0, 1) end
    opts = util.options("optim.sgd", opts, {"nesterov", "weight_decay"}, "{nesterov = true}")
    local nesterov, decay = opts.nesterov == true, opts.weight_decay or 0
    if type(decay) ~= "number" or decay < 0 then fail("optim.sgd: weight_decay must be a non-negative number, got %s", tostring(decay)) end
    if nesterov and not (momentum and momentum > 0) then fail("optim.sgd: nesterov needs a momentum above 0") end
    local opt = {}
    function opt.init(params)
      local state = {count = hl.zeros({}, "int32")}
      if momentum and momentum > 0 then state.velocity = zeros_like_tree("optim.sgd.init", params) end
      return state
    end
    function opt.update(grads, state, params)
      if type(state) ~= "table" or state.count == nil then
        fail("optim.sgd.update: state must be the table opt.init returned, got %s", type(state))
      end
      local count = state.count + 1
      local step = rate(count)
      if decay > 0 then grads = map("optim.sgd.update", function(g, p) return g + p * decay end, grads, params) end
      if momentum and momentum > 0 then
        if state.velocity == nil then fail("optim.sgd.update: state has no velocity: pass the state opt.init returned") end
        local velocity = map("optim.sgd.update", function(v, g) return v * momentum + g end, state.velocity, grads)
        local direction = nesterov and map("optim.sgd.update", function(g, v) return g + v * momentum end, grads, velocity)
                          or velocity
        return map("optim.sgd.update", function(p, v) return p - v * in_dtype(step, p.dtype) end, params, direction),
               {count = count, velocity = velocity}
      end
      return map("optim.sgd.update", function(p, g) return p - g * in_dtype(step, p.dtype) end, params, grads), {count = count}
    end
    return opt
  end

  -- state must be what opt.init returned: a table with these keys
  local function check_state(op, state, keys)
    local ok = type(state) == "table"
    for _, k in ipairs(keys) do ok = ok and state[k] ~= nil end
    if not ok then fail("%s: state must be the table opt.init returned ({%s})", op, table.concat(keys, ", ")) end
  end

  -- Adam (Kingma & Ba 2015, with bias correction) and, given weight_decay, AdamW (Loshchilov and
  -- Hutter: the decay decoupled from the gradient's moments, as optax.adamw and
  -- torch.optim.AdamW): p <- p - lr * (m_hat / (sqrt(v_hat) + eps) + weight_decay * p)
  local function adam_family(op, lr, opts, names, weight_decay)
    local rate = check_rate(op, lr)
    opts = util.options(op, opts, names)
    local b1, b2, eps = opts.b1 or 0.9, opts.b2 or 0.999, opts.eps or 1e-8
    check_coefficient(op, "b1", b1, 0, 1)
    check_coefficient(op, "b2", b2, 0, 1)
    if type(eps) ~= "number" or eps < 0 then fail("%s: eps must be a non-negative number, got %s", op, tostring(eps)) end
    local decay = weight_decay and (opts.weight_decay or weight_decay)
    if decay and (type(decay) ~= "number" or decay < 0) then
      fail("%s: weight_decay must be a non-negative number, got %s", op, tostring(decay))
    end
    local log_b1, log_b2 = math.log(b1), math.log(b2)
    local up = op .. ".update"
    local opt = {}
    function opt.init(params)
      return {count = hl.zeros({}, "int32"), mu = zeros_like_tree(op .. ".init", params), nu = zeros_like_tree(op .. ".init", params)}
    end
    function opt.update(grads, state, params)
      check_state(up, state, {"count", "mu", "nu"})
      local count = state.count + 1
      local t = count:astype("float64")
      -- 1 - b^t as exp(t log b): t is an array (traced under jit), b a Lua number; scalars in
      -- float64, cast to each leaf's dtype so float32 leaves stay float32 arithmetic
      local correct1, correct2 = 1 - hl.exp(t * log_b1), 1 - hl.exp(t * log_b2)
      local mu = map(up, function(m, g) return m * b1 + g * (1 - b1) end, state.mu, grads)
      local nu = map(up, function(v, g) return v * b2 + hl.square(g) * (1 - b2) end, state.nu, grads)
      local step = rate(count)
      local new = map(up, function(p, m, v)
        local d = p.dtype
        local s = in_dtype(step, d)
        local dir = (m / correct1:astype(d)) * s / (hl.sqrt(v / correct2:astype(d)) + eps)
        if decay then dir = dir + p * decay * s end
        return p - dir:astype(d)
      end, params, mu, nu)
      return new, {count = count, mu = mu, nu = nu}
    end
    return opt
  end

  -- adam(lr [, opts]): opts.b1 (0.9), opts.b2 (0.999), opts.eps (1e-8)
  function optim.adam(lr, opts) return adam_family("optim.adam", lr, opts, {"b1", "b2", "eps"}) end

  -- adamw(lr [, opts]): adam's options and opts.weight_decay (1e-4, optax's default)
  function optim.adamw(lr, opts)
    return adam_family("optim.adamw", lr, opts, {"b1", "b2", "eps", "weight_decay"}, 1e-4)
  end

  -- rmsprop(lr [, opts]): v <- decay * v + (1 - decay) * g^2, p <- p - lr * g / (sqrt(v) + eps)
  -- (PyTorch's RMSprop); opts.decay (0.9), opts.eps (1e-8), opts.momentum (0)
  function optim.rmsprop(lr, opts)
    local rate = check_rate("optim.rmsprop", lr)
    opts = util.options("optim.rmsprop", opts, {"decay", "eps", "momentum"})
    local decay, eps, momentum = opts.decay or 0.9, opts.eps or 1e-8, opts.momentum or 0
    check_coefficient("optim.rmsprop", "decay", decay, 0, 1)
    check_coefficient("optim.rmsprop", "momentum", momentum, 0, 1)
    if type(eps) ~= "number" or eps < 0 then fail("optim.rmsprop: eps must be a non-negative number, got %s", tostring(eps)) end
    local opt = {}
    function opt.init(params)
      local s = {count = hl.zeros({}, "int32"), nu = zeros_like_tree("optim.rmsprop.init", params)}
      if momentum > 0 then s.velocity = zeros_like_tree("optim.rmsprop.init", params) end
      return s
    end
    function opt.update(grads, state, params)
      check_state("optim.rmsprop.update", state, {"count", "nu"})
      local count = state.count + 1
      local step = rate(count)
      local nu = map("optim.rmsprop.update", function(v, g) return v * decay + hl.square(g) * (1 - decay) end, state.nu, grads)
      local dir = map("optim.rmsprop.update", function(g, v) return g / (hl.sqrt(v) + eps) end, grads, nu)
      local new_state = {count = count, nu = nu}
      if momentum > 0 then
        dir = map("optim.rmsprop.update", function(b, d) return b * momentum + d end, state.velocity, dir)
        new_state.velocity = dir
      end
      return map("optim.rmsprop.update", function(p, d) return p - d * in_dtype(step, p.dtype) end, params, dir), new_state
    end
    return opt
  end

  -- adagrad(lr [, opts]): s <- s + g^2, p <- p - lr * g / (sqrt(s) + eps) (PyTorch's Adagrad);
  -- opts.eps (1e-10), opts.initial (the accumulator's start, 0)
  function optim.adagrad(lr, opts)
    local rate = check_rate("optim.adagrad", lr)
    opts = util.options("optim.adagrad", opts, {"eps", "initial"})
    local eps, initial = opts.eps or 1e-10, opts.initial or 0
    if type(eps) ~= "number" or eps < 0 then fail("optim.adagrad: eps must be a non-negative number, got %s", tostring(eps)) end
    if type(initial) ~= "number" or initial < 0 then fail("optim.adagrad: initial must be a non-negative number, got %s", tostring(initial)) end
    local opt = {}
    function opt.init(params)
      return {count = hl.zeros({}, "int32"),
              sum = map("optim.adagrad.init", function(z) return z + initial end, zeros_like_tree("optim.adagrad.init", params))}
    end
    function opt.update(grads, state, params)
      check_state("optim.adagrad.update", state, {"count", "sum"})
      local count = state.count + 1
      local step = rate(count)
      local sum = map("optim.adagrad.update", function(s, g) return s + hl.square(g) end, state.sum, grads)
      return map("optim.adagrad.update", function(p, g, s) return p - g / (hl.sqrt(s) + eps) * in_dtype(step, p.dtype) end,
                 params, grads, sum), {count = count, sum = sum}
    end
    return opt
  end

  -- clip_by_global_norm(grads, max_norm) -> grads, norm: every leaf scaled by
  -- min(1, max_norm / norm), norm the 2-norm of all leaves together (optax's clip_by_global_norm)
  function optim.clip_by_global_norm(grads, max_norm)
    if type(max_norm) ~= "number" or not (max_norm > 0) then
      fail("optim.clip_by_global_norm: max_norm must be a positive number, got %s", tostring(max_norm))
    end
    local leaves = tree.leaves(grads)
    if #leaves == 0 then fail("optim.clip_by_global_norm: grads has no arrays") end
    local total
    for _, g in ipairs(leaves) do
      if not core.is_array(g) then fail("optim.clip_by_global_norm: gradients must be arrays, got a %s", type(g)) end
      local s = hl.sum(hl.square(g:astype("float32")))
      total = total and total + s or s
    end
    local norm = hl.sqrt(total)
    local scale = hl.minimum(max_norm / hl.maximum(norm, 1e-30), 1)
    return map("optim.clip_by_global_norm", function(g) return g * scale:astype(g.dtype) end, grads), norm
  end

  local function check_steps(op, what, v)
    if type(v) ~= "number" or v < 1 or v ~= math.floor(v) then fail("%s: %s must be a positive integer, got %s", op, what, tostring(v)) end
  end

  -- warmup_cosine_decay(peak, warmup, steps [, final]): from 0 up to peak linearly over the first
  -- `warmup` steps, then down to final (default 0) along half a cosine by step `steps`
  function optim.warmup_cosine_decay(peak, warmup, steps, final)
    if type(peak) ~= "number" or peak <= 0 then fail("optim.warmup_cosine_decay: peak must be a positive number, got %s", tostring(peak)) end
    check_steps("optim.warmup_cosine_decay", "warmup", warmup)
    check_steps("optim.warmup_cosine_decay", "steps", steps)
    if steps <= warmup then fail("optim.warmup_cosine_decay: steps (%d) must be more than warmup (%d)", steps, warmup) end
    final = final or 0
    if type(final) ~= "number" or final < 0 then fail("optim.warmup_cosine_decay: final must be a non-negative number, got %s", tostring(final)) end
    return function(count)
      local t = count:astype("float64")
      local rise = peak * t / warmup
      local frac = hl.minimum(hl.maximum(t - warmup, 0), steps - warmup) * (1 / (steps - warmup))
      local fall = final + (peak - final) * 0.5 * (1 + hl.cos(frac * math.pi))
      return hl.where(hl.le(t, warmup), rise, fall)
    end
  end

  -- exponential_decay(lr, rate, every [, staircase]): lr * rate^((step - 1) / every); with
  -- staircase, the exponent is an integer
  function optim.exponential_decay(lr, rate, every, staircase)
    if type(lr) ~= "number" or lr <= 0 then fail("optim.exponential_decay: lr must be a positive number, got %s", tostring(lr)) end
    if type(rate) ~= "number" or not (rate > 0) then fail("optim.exponential_decay: rate must be a positive number, got %s", tostring(rate)) end
    check_steps("optim.exponential_decay", "every", every)
    local log_rate = math.log(rate)
    return function(count)
      local e = (count:astype("float64") - 1) * (1 / every)
      if staircase then e = hl.floor(e) end
      return lr * hl.exp(e * log_rate)
    end
  end

  -- piecewise_constant(boundaries, values): values[1] up to step boundaries[1], values[2] up to
  -- boundaries[2], ..., values[#boundaries + 1] after
  function optim.piecewise_constant(boundaries, values)
    if type(boundaries) ~= "table" or type(values) ~= "table" or #values ~= #boundaries + 1 then
      fail("optim.piecewise_constant: needs n boundaries and n + 1 values, got %s and %s",
           type(boundaries) == "table" and #boundaries or type(boundaries), type(values) == "table" and #values or type(values))
    end
    for i, b in ipairs(boundaries) do
      check_steps("optim.piecewise_constant", "boundary " .. i, b)
      if i > 1 and b <= boundaries[i - 1] then fail("optim.piecewise_constant: boundaries must increase (%d after %d)", b, boundaries[i - 1]) end
    end
    for i, v in ipairs(values) do
      if type(v) ~= "number" or v <= 0 then fail("optim.piecewise_constant: value %d must be a positive number, got %s", i, tostring(v)) end
    end
    return function(count)
      local r = hl.full({}, values[#values], "float64")
      for i = #boundaries, 1, -1 do r = hl.where(hl.le(count, boundaries[i]), values[i], r) end
      return r
    end
  end

  -- cosine_decay(lr, steps [, final]): a schedule from lr at step 1 down to final (default 0) at
  -- step `steps` along half a cosine, then constant
  function optim.cosine_decay(lr, steps, final)
    if type(lr) ~= "number" or lr <= 0 then fail("optim.cosine_decay: lr must be a positive number, got %s", tostring(lr)) end
    if type(steps) ~= "number" or steps < 1 or steps ~= math.floor(steps) then
      fail("optim.cosine_decay: steps must be a positive integer, got %s", tostring(steps))
    end
    final = final or 0
    if type(final) ~= "number" or final < 0 then fail("optim.cosine_decay: final must be a non-negative number, got %s", tostring(final)) end
    return function(count)
      local t = hl.minimum(count:astype("float64") - 1, steps - 1) * (1 / math.max(steps - 1, 1))
      return final + (lr - final) * 0.5 * (1 + hl.cos(t * math.pi))
    end
  end

  optim.sgd = shared.named("optim.sgd", optim.sgd)
  optim.cosine_decay = shared.named("optim.cosine_decay", optim.cosine_decay)
  optim.adam = shared.named("optim.adam", optim.adam)
  for _, k in ipairs({"adamw", "rmsprop", "adagrad", "clip_by_global_norm", "warmup_cosine_decay", "exponential_decay",
                      "piecewise_constant"}) do
    optim[k] = shared.named("optim." .. k, optim[k])
  end
  return optim
end
