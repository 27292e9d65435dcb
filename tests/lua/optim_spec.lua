-- hl.optim: sgd (with and without momentum), adam and cosine_decay against closed forms computed by
-- NumPy, over pytrees, eagerly and under jit; a least-squares fit that reaches NumPy's lstsq; errors.
local hl = require "halua"
local np = require "support.numpy"
local suite = require "support.suite"

math.randomseed(5)

local T = 4                                   -- updates per case
local F64 = {rtol = 1e-12, atol = 1e-14}

-- NumPy: the matrix whose row t sums c * decay^(t-k) over the gradients k <= t
local function ema(decay, c)
  return string.format("(np.tril(%.17g ** np.clip(np.subtract.outer(np.arange(%d), np.arange(%d)), 0, None)) * %.17g)",
                       decay, T, T, c)
end
-- the per-step rates of cosine_decay(lr, steps) as a NumPy vector
local function cosine(lr, steps)
  return string.format("(0.5 * %.17g * (1 + np.cos(np.pi * np.minimum(np.arange(%d), %d) / %d)))", lr, T, steps - 1, steps - 1)
end

-- run T updates of opt from params p (a pytree) with the gradients gs[t] (same trees)
local function run(opt, p, gs)
  local state = opt.init(p)
  for t = 1, T do p, state = opt.update(gs[t], state, p) end
  return p, state
end
local function run_jit(opt, p, gs)
  local update = hl.jit(opt.update)
  local state = opt.init(p)
  for t = 1, T do p, state = update(gs[t], state, p) end
  return p, state
end

suite("optim against closed forms", function(case)
  local p0 = np.rand({3, 2}, -1, 1, "float64")
  local G = np.rand({T, 3, 2}, -1, 1, "float64")
  local gs = {}
  for t = 1, T do gs[t] = {w = G[t]} end
  local lr = 0.1
  for _, runner in ipairs {{"", run}, {" (jit)", run_jit}} do
    local tag, go = runner[1], runner[2]
    case("sgd" .. tag, function() return go(hl.optim.sgd(lr), {w = p0}, gs).w end,
         string.format("a - %g * b.sum(0)", lr), {p0, G}, F64)
    case("sgd with momentum 0.9" .. tag, function() return go(hl.optim.sgd(lr, 0.9), {w = p0}, gs).w end,
         string.format("a - %g * np.tensordot(%s, b, 1).sum(0)", lr, ema(0.9, 1)), {p0, G}, F64)
    local adam = string.format("a - (%%s[:, None, None] * (np.tensordot(%s, b, 1) / (1 - 0.9 ** np.arange(1, %d)[:, None, None])) / " ..
      "(np.sqrt(np.tensordot(%s, b ** 2, 1) / (1 - 0.999 ** np.arange(1, %d)[:, None, None])) + 1e-8)).sum(0)",
      ema(0.9, 0.1), T + 1, ema(0.999, 0.001), T + 1)
    case("adam" .. tag, function() return go(hl.optim.adam(lr), {w = p0}, gs).w end,
         adam:format("np.full(" .. T .. ", " .. lr .. ")"), {p0, G}, F64)
    case("adam with cosine_decay" .. tag, function() return go(hl.optim.adam(hl.optim.cosine_decay(lr, 3)), {w = p0}, gs).w end,
         adam:format(cosine(lr, 3)), {p0, G}, {rtol = 1e-7, atol = 1e-9})   -- the schedule is float32
    case("sgd with cosine_decay" .. tag, function() return go(hl.optim.sgd(hl.optim.cosine_decay(lr, T)), {w = p0}, gs).w end,
         string.format("a - (%s[:, None, None] * b).sum(0)", cosine(lr, T)), {p0, G}, {rtol = 1e-7, atol = 1e-9})
    -- the recurrences step by step in NumPy (assignment expressions inside one expression)
    case("sgd with nesterov momentum and weight decay" .. tag, function()
      return go(hl.optim.sgd(lr, 0.9, {nesterov = true, weight_decay = 0.01}), {w = p0}, gs).w
    end, "[(p := a.copy()), (v := np.zeros_like(a))] and [(g2 := g + 0.01 * p, v := 0.9 * v + g2, " ..
         "p := p - 0.1 * (g2 + 0.9 * v)) for g in b][-1][2]", {p0, G}, F64)
    case("adamw" .. tag, function() return go(hl.optim.adamw(lr, {weight_decay = 0.05}), {w = p0}, gs).w end,
         "[(p := a.copy()), (m := np.zeros_like(a)), (v := np.zeros_like(a)), (t := 0)] and " ..
         "[(t := t + 1, m := 0.9 * m + 0.1 * g, v := 0.999 * v + 0.001 * g * g, " ..
         "p := p - 0.1 * ((m / (1 - 0.9 ** t)) / (np.sqrt(v / (1 - 0.999 ** t)) + 1e-8) + 0.05 * p)) for g in b][-1][3]",
         {p0, G}, {rtol = 1e-10, atol = 1e-12})
    case("rmsprop" .. tag, function() return go(hl.optim.rmsprop(lr), {w = p0}, gs).w end,
         "[(p := a.copy()), (v := np.zeros_like(a))] and [(v := 0.9 * v + 0.1 * g * g, " ..
         "p := p - 0.1 * g / (np.sqrt(v) + 1e-8)) for g in b][-1][1]", {p0, G}, F64)
    case("rmsprop with momentum" .. tag, function() return go(hl.optim.rmsprop(lr, {momentum = 0.5, decay = 0.8}), {w = p0}, gs).w end,
         "[(p := a.copy()), (v := np.zeros_like(a)), (u := np.zeros_like(a))] and [(v := 0.8 * v + 0.2 * g * g, " ..
         "u := 0.5 * u + g / (np.sqrt(v) + 1e-8), p := p - 0.1 * u) for g in b][-1][2]", {p0, G}, F64)
    case("adagrad" .. tag, function() return go(hl.optim.adagrad(lr, {initial = 0.1}), {w = p0}, gs).w end,
         "[(p := a.copy()), (s := np.full_like(a, 0.1))] and [(s := s + g * g, " ..
         "p := p - 0.1 * g / (np.sqrt(s) + 1e-10)) for g in b][-1][1]", {p0, G}, F64)
  end
  local g2 = {a = np.rand({3}, -2, 2, "float32"), b = np.rand({2, 2}, -2, 2, "float32")}
  for _, max_norm in ipairs({0.5, 100}) do
    case("clip_by_global_norm to " .. max_norm, function()
      local c = hl.optim.clip_by_global_norm({a = g2.a, b = g2.b}, max_norm)
      return hl.concatenate({c.a, c.b:reshape(-1)}, 1)
    end, string.format("np.concatenate([a, b.ravel()]) * float(min(1.0, %g / np.sqrt((a.astype(np.float64) ** 2).sum() + " ..
                       "(b.astype(np.float64) ** 2).sum())))", max_norm), {g2.a, g2.b}, {rtol = 1e-6, atol = 1e-7})
  end
  local steps = hl.arange(1, 13):astype("int32")
  local function sched(f) return function() return hl.stack((function()
    local r = {}
    for i = 1, 12 do r[i] = f(steps[i]) end
    return r
  end)(), 1) end end
  case("warmup_cosine_decay", sched(hl.optim.warmup_cosine_decay(0.5, 3, 10, 0.05)),
       "np.where(np.arange(1, 13) <= 3, 0.5 * np.arange(1, 13) / 3, 0.05 + 0.45 * 0.5 * (1 + np.cos(np.pi * " ..
       "np.clip(np.arange(1, 13) - 3, 0, 7) / 7)))", {}, F64)
  case("exponential_decay", sched(hl.optim.exponential_decay(0.5, 0.1, 4)), "0.5 * 0.1 ** ((np.arange(1, 13) - 1) / 4)", {},
       {rtol = 1e-12, atol = 1e-15})
  case("exponential_decay, staircase", sched(hl.optim.exponential_decay(0.5, 0.1, 4, true)),
       "0.5 * 0.1 ** np.floor((np.arange(1, 13) - 1) / 4)", {}, {rtol = 1e-12, atol = 1e-15})
  case("piecewise_constant", sched(hl.optim.piecewise_constant({3, 7}, {1, 0.5, 0.25})),
       "np.select([np.arange(1, 13) <= 3, np.arange(1, 13) <= 7], [1.0, 0.5], 0.25)", {}, F64)
end)

describe("optim over pytrees", function()
  local params = {layer = {w = hl.ones({2, 3}), b = hl.zeros(3)}, scale = hl.array(2, "float64")}
  local grads = {layer = {w = hl.full({2, 3}, 0.5), b = hl.ones(3)}, scale = hl.array(-1, "float64")}
  it("keep the tree's structure, dtypes and the step count", function()
    for _, opt in ipairs {hl.optim.sgd(0.1), hl.optim.sgd(0.1, 0.5), hl.optim.adam(0.1)} do
      local state = opt.init(params)
      local p, s = opt.update(grads, state, params)
      assert.are.same({2, 3}, p.layer.w.shape)
      assert.are.equal("float32", p.layer.b.dtype)
      assert.are.equal("float64", p.scale.dtype)
      assert.are.equal(1, s.count:item())
      p, s = opt.update(grads, s, p)
      assert.are.equal(2, s.count:item())
    end
  end)
  it("sgd moves every leaf by -lr * g; adam's first step is -lr * sign(g)", function()
    local p = hl.optim.sgd(0.1).update(grads, hl.optim.sgd(0.1).init(params), params)
    assert(math.abs(p.layer.w[{1, 1}]:item() - 0.95) < 1e-7)
    assert(math.abs(p.scale:item() - 2.1) < 1e-15)
    local adam = hl.optim.adam(0.01)
    local q = adam.update(grads, adam.init(params), params)
    assert(math.abs(q.layer.b[1]:item() + 0.01) < 1e-6)
    assert(math.abs(q.scale:item() - 2.01) < 1e-9)
  end)
  it("a jitted train step fits least squares to NumPy's lstsq", function()
    local x = np.rand({40, 3}, -1, 1, "float64")
    local y = hl.matmul(x, hl.array({{1.5}, {-2}, {0.25}}, "float64")) + np.rand({40, 1}, -0.1, 0.1, "float64")
    local opt = hl.optim.adam(0.05)
    local step = hl.jit(function(p, s)
      local g = hl.grad(function(q) return hl.nn.mse(hl.matmul(x, q.w) + q.b, y) end)(p)
      return opt.update(g, s, p)
    end)
    local p = {w = hl.zeros({3, 1}, "float64"), b = hl.zeros({1}, "float64")}
    local s = opt.init(p)
    for _ = 1, 1500 do p, s = step(p, s) end
    local batch = np.batch()
    local want = batch:add("np.linalg.lstsq(np.hstack([a, np.ones((40, 1))]), b, rcond=None)[0]", {x, y})
    batch:run()
    np.assert_close(hl.concatenate({p.w, hl.reshape(p.b, {1, 1})}, 1), want(), {rtol = 1e-5, atol = 1e-6})
  end)
end)

describe("optim.cosine_decay", function()
  it("goes from lr to final along half a cosine, then stays", function()
    local f = hl.optim.cosine_decay(1, 5, 0.1)
    local function at(t) return f(hl.array(t, "int32")):item() end
    assert(math.abs(at(1) - 1) < 1e-7)
    assert(math.abs(at(3) - 0.55) < 1e-6)
    assert(math.abs(at(5) - 0.1) < 1e-7)
    assert(math.abs(at(50) - 0.1) < 1e-7)
  end)
end)

describe("optim errors", function()
  local function fails(words, f)
    local ok, err = pcall(f)
    assert.is_false(ok)
    assert.are.equal("string", type(err))
    for _, word in ipairs(words) do assert(err:find(word, 1, true), "error '" .. err .. "' lacks '" .. word .. "'") end
  end
  it("name the optimiser and what is wrong", function()
    fails({"halua: optim.sgd:", "learning rate must be a positive number", "-1"}, function() hl.optim.sgd(-1) end)
    fails({"halua: optim.adam:", "learning rate", "nil"}, function() hl.optim.adam() end)
    fails({"halua: optim.sgd:", "momentum must be a number in [0, 1)", "1.5"}, function() hl.optim.sgd(0.1, 1.5) end)
    fails({"halua: optim.adam:", "b2"}, function() hl.optim.adam(0.1, {b2 = 1}) end)
    fails({"halua: optim.adam:", "options must be a table"}, function() hl.optim.adam(0.1, 0.9) end)
    fails({"halua: optim.cosine_decay:", "steps must be a positive integer"}, function() hl.optim.cosine_decay(0.1, 0) end)
    local opt = hl.optim.adam(0.1)
    local p = {w = hl.ones(2)}
    fails({"halua: optim.adam.update:", "same tree structure"}, function() opt.update({v = hl.ones(2)}, opt.init(p), p) end)
    fails({"halua: optim.adam.update:", "state must be the table opt.init returned"}, function() opt.update(p, {}, p) end)
    fails({"halua: optim.adam.init:", "parameters must be arrays", "string"}, function() opt.init({w = "x"}) end)
    local sgd = hl.optim.sgd(0.1, 0.9)
    fails({"halua: optim.sgd.update:", "no velocity"}, function() sgd.update(p, {count = hl.zeros({}, "int32")}, p) end)
  end)
end)
