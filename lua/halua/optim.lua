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

  -- sgd(lr [, momentum]): p <- p - lr * v with v <- momentum * v + g (PyTorch's form); plain
  -- gradient descent without momentum
  function optim.sgd(lr, momentum, ...)
    if select("#", ...) > 0 then
      fail("optim.sgd: takes (lr [, momentum]); there is no third argument (no weight decay: add it to the loss)")
    end
    local rate = check_rate("optim.sgd", lr)
    if momentum ~= nil then check_coefficient("optim.sgd", "momentum", momentum, 0, 1) end
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
      if momentum and momentum > 0 then
        if state.velocity == nil then fail("optim.sgd.update: state has no velocity: pass the state opt.init returned") end
        local velocity = map("optim.sgd.update", function(v, g) return v * momentum + g end, state.velocity, grads)
        return map("optim.sgd.update", function(p, v) return p - v * in_dtype(step, p.dtype) end, params, velocity),
               {count = count, velocity = velocity}
      end
      return map("optim.sgd.update", function(p, g) return p - g * in_dtype(step, p.dtype) end, params, grads), {count = count}
    end
    return opt
  end

  -- adam(lr [, opts]): Kingma & Ba 2015 with bias correction; opts.b1 (0.9), opts.b2 (0.999),
  -- opts.eps (1e-8)
  function optim.adam(lr, opts)
    local rate = check_rate("optim.adam", lr)
    opts = util.options("optim.adam", opts, {"b1", "b2", "eps"})
    local b1, b2, eps = opts.b1 or 0.9, opts.b2 or 0.999, opts.eps or 1e-8
    check_coefficient("optim.adam", "b1", b1, 0, 1)
    check_coefficient("optim.adam", "b2", b2, 0, 1)
    if type(eps) ~= "number" or eps < 0 then fail("optim.adam: eps must be a non-negative number, got %s", tostring(eps)) end
    local log_b1, log_b2 = math.log(b1), math.log(b2)
    local opt = {}
    function opt.init(params)
      return {count = hl.zeros({}, "int32"), mu = zeros_like_tree("optim.adam.init", params),
              nu = zeros_like_tree("optim.adam.init", params)}
    end
    function opt.update(grads, state, params)
      if type(state) ~= "table" or state.count == nil or state.mu == nil or state.nu == nil then
        fail("optim.adam.update: state must be the table opt.init returned ({count, mu, nu})")
      end
      local count = state.count + 1
      local t = count:astype("float64")
      -- 1 - b^t as exp(t log b): t is an array (traced under jit), b a Lua number; scalars in
      -- float64, cast to each leaf's dtype so float32 leaves stay float32 arithmetic
      local correct1, correct2 = 1 - hl.exp(t * log_b1), 1 - hl.exp(t * log_b2)
      local mu = map("optim.adam.update", function(m, g) return m * b1 + g * (1 - b1) end, state.mu, grads)
      local nu = map("optim.adam.update", function(v, g) return v * b2 + hl.square(g) * (1 - b2) end, state.nu, grads)
      local step = rate(count)
      local new = map("optim.adam.update", function(p, m, v)
        local d = p.dtype
        return p - ((m / correct1:astype(d)) * in_dtype(step, d) / (hl.sqrt(v / correct2:astype(d)) + eps)):astype(d)
      end, params, mu, nu)
      return new, {count = count, mu = mu, nu = nu}
    end
    return opt
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
  return optim
end
