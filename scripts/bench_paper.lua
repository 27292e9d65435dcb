-- The interpreted-vs-compiled comparison of the JAX paper, on the performance issue's train step:
-- one SGD step of a 784-1024-1024-10 ReLU MLP with softmax cross-entropy on a batch of 256
-- (float32 in halua; Lua numbers are doubles), written three ways:
--   plain Lua   the forward and backward passes as loops over Lua arrays (LuaJIT-compiled),
--   eager halua hl.value_and_grad op by op, then the update,
--   jit halua   the whole step under one hl.jit (one pipeline).
-- The three must agree on the loss and on the updated weights, so the plain-Lua backward pass is
-- checked against hl.grad before anything is timed.
-- Used by scripts/bench: run(now, best_of) returns the rows and a line saying the three agree.
local hl = require "halua"

local M = {}
local N, D, H, C = 256, 784, 1024, 10
local LR = 0.01

-- deterministic data and parameters, shared by the three versions as flat row-major Lua arrays
local function lcg(seed)
  local s = seed
  return function()
    s = (s * 1103515245 + 12345) % 2147483648
    return s / 2147483648
  end
end
local function flat(n, scale, rnd)
  local t = {}
  for i = 1, n do t[i] = (rnd() * 2 - 1) * scale end
  return t
end
local function problem()
  local rnd = lcg(7)
  local p = {
    w1 = flat(D * H, 1 / math.sqrt(D), rnd), b1 = flat(H, 0, rnd),
    w2 = flat(H * H, 1 / math.sqrt(H), rnd), b2 = flat(H, 0, rnd),
    w3 = flat(H * C, 1 / math.sqrt(H), rnd), b3 = flat(C, 0, rnd),
  }
  local x = flat(N * D, 1, rnd)
  local y = {}
  for i = 1, N do y[i] = (i % C) + 1 end
  return p, x, y
end

---------------------------------------------------------------- plain Lua

-- out[n x m] = a[n x k] b[k x m] (+ bias per column)
local function mm(a, b, n, k, m, bias)
  local out = {}
  for i = 0, n - 1 do
    local row = i * m
    for j = 1, m do out[row + j] = bias and bias[j] or 0 end
    for kk = 0, k - 1 do
      local av, brow = a[i * k + kk + 1], kk * m
      if av ~= 0 then
        for j = 1, m do out[row + j] = out[row + j] + av * b[brow + j] end
      end
    end
  end
  return out
end
-- out[k x m] = a^T b for a[n x k], b[n x m]
local function mm_tn(a, b, n, k, m)
  local out = {}
  for i = 1, k * m do out[i] = 0 end
  for r = 0, n - 1 do
    for kk = 0, k - 1 do
      local av, orow = a[r * k + kk + 1], kk * m
      if av ~= 0 then
        for j = 1, m do out[orow + j] = out[orow + j] + av * b[r * m + j] end
      end
    end
  end
  return out
end
-- out[n x k] = a b^T for a[n x m], b[k x m]
local function mm_nt(a, b, n, m, k)
  local out = {}
  for i = 0, n - 1 do
    for kk = 0, k - 1 do
      local s = 0
      for j = 1, m do s = s + a[i * m + j] * b[kk * m + j] end
      out[i * k + kk + 1] = s
    end
  end
  return out
end

-- the sums of the columns of g[n x m]: a bias's gradient
local function col_sums(g, n, m)
  local out = {}
  for j = 1, m do
    local s = 0
    for i = 0, n - 1 do s = s + g[i * m + j] end
    out[j] = s
  end
  return out
end

local function lua_step(p, x, y)
  local z1 = mm(x, p.w1, N, D, H, p.b1)
  local h1 = {}
  for i = 1, N * H do h1[i] = z1[i] > 0 and z1[i] or 0 end
  local z2 = mm(h1, p.w2, N, H, H, p.b2)
  local h2 = {}
  for i = 1, N * H do h2[i] = z2[i] > 0 and z2[i] or 0 end
  local z3 = mm(h2, p.w3, N, H, C, p.b3)
  -- mean cross-entropy and its gradient by the logits: (softmax - onehot) / N
  local loss, g3 = 0, {}
  for i = 0, N - 1 do
    local mx = -math.huge
    for j = 1, C do mx = math.max(mx, z3[i * C + j]) end
    local s = 0
    for j = 1, C do s = s + math.exp(z3[i * C + j] - mx) end
    local lse = mx + math.log(s)
    loss = loss + (lse - z3[i * C + y[i + 1]]) / N
    for j = 1, C do
      g3[i * C + j] = (math.exp(z3[i * C + j] - lse) - (j == y[i + 1] and 1 or 0)) / N
    end
  end
  local gw3, gb3 = mm_tn(h2, g3, N, H, C), col_sums(g3, N, C)
  local g2 = mm_nt(g3, p.w3, N, C, H)
  for i = 1, N * H do if z2[i] <= 0 then g2[i] = 0 end end
  local gw2, gb2 = mm_tn(h1, g2, N, H, H), col_sums(g2, N, H)
  local g1 = mm_nt(g2, p.w2, N, H, H)
  for i = 1, N * H do if z1[i] <= 0 then g1[i] = 0 end end
  local gw1, gb1 = mm_tn(x, g1, N, D, H), col_sums(g1, N, H)
  local grads = {w1 = gw1, b1 = gb1, w2 = gw2, b2 = gb2, w3 = gw3, b3 = gb3}
  local q = {}
  for k, v in pairs(p) do
    local g, u = grads[k], {}
    for i = 1, #v do u[i] = v[i] - LR * g[i] end
    q[k] = u
  end
  return loss, q
end

---------------------------------------------------------------- halua

local shapes = {w1 = {D, H}, b1 = {H}, w2 = {H, H}, b2 = {H}, w3 = {H, C}, b3 = {C}}

local function loss_fn(p, x, onehot)
  local h = hl.nn.relu(hl.matmul(x, p.w1) + p.b1)
  h = hl.nn.relu(hl.matmul(h, p.w2) + p.b2)
  return -(hl.nn.log_softmax(hl.matmul(h, p.w3) + p.b3, -1) * onehot):sum() / N
end
local function hl_step(p, x, onehot)
  local l, g = hl.value_and_grad(loss_fn)(p, x, onehot)
  local q = {}
  for k, v in pairs(p) do q[k] = v - LR * g[k] end
  return l, q
end

-- rows for scripts/bench: {key, label, better}, results, and a note line
function M.run(now, best_of)
  local p, x, y = problem()
  local hp = {}
  for k, v in pairs(p) do hp[k] = hl.reshape(hl.array(v, "float32"), shapes[k]) end
  local hx = hl.reshape(hl.array(x, "float32"), {N, D})
  local oh = {}
  for i = 1, N do
    oh[i] = {}
    for j = 1, C do oh[i][j] = (j == y[i]) and 1 or 0 end
  end
  local honehot = hl.array(oh, "float32")
  local jit_step = hl.jit(hl_step)

  -- agreement first: loss and an updated weight, plain Lua against halua
  local t0 = now()
  local l_lua, q_lua = lua_step(p, x, y)
  local lua_s = now() - t0
  local l_hl, q_hl = jit_step(hp, hx, honehot)
  local w3 = hl.reshape(q_hl.w3, {H * C}):totable()
  local worst = 0
  for i = 1, H * C do worst = math.max(worst, math.abs(w3[i] - q_lua.w3[i])) end
  if math.abs(l_hl:item() - l_lua) > 1e-4 * math.max(1, math.abs(l_lua)) or worst > 1e-5 then
    error(string.format("halua: bench_paper: plain Lua and halua disagree (loss %.7g vs %.7g, w3 by %.2g)",
                        l_lua, l_hl:item(), worst), 0)
  end
  -- one more plain-Lua step for the best of two (each takes seconds)
  t0 = now()
  lua_step(p, x, y)
  lua_s = math.min(lua_s, now() - t0)
  local eager_s = best_of(function() return hl_step(hp, hx, honehot) end, 3, 1)
  local jit_s = best_of(function() return jit_step(hp, hx, honehot) end, 5, 3)
  return {
    {"plain Lua loops (LuaJIT, double)", lua_s * 1e3},
    {"eager halua, op by op", eager_s * 1e3},
    {"hl.jit: one pipeline", jit_s * 1e3},
  }, string.format("the three agree: loss %.6f (plain Lua %.6f), updated w3 within %.1e", l_hl:item(), l_lua, worst)
end

return M
