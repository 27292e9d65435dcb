-- hl.nn: activations, conv2d and pooling (NCHW), dropout, losses, initialisers: values against
-- NumPy (eager and under jit), gradients against central differences, and their errors.
local hl = require "halua"
local np = require "support.numpy"
local suite = require "support.suite"

math.randomseed(47)

-- a case evaluated both eagerly and under jit against the same NumPy expression
local function both(case, name, f, expr, inputs, opts)
  case(name, function() return f(unpack(inputs)) end, expr, inputs, opts)
  case(name .. " (jit)", function() return hl.jit(f)(unpack(inputs)) end, expr, inputs, opts)
end

local F32 = {rtol = 1e-5, atol = 1e-6}

suite("nn activations against NumPy", function(case)
  local x = hl.array({-1e4, -100, -20, -3, -1, -0.5, 0, 0.5, 1, 3, 20, 100, 1e4})
  local r = np.rand({3, 7}, -4, 4)
  local erf = "np.vectorize(math.erf)"
  for _, a in ipairs {{"extremes", x}, {"random", r}} do
    local tag, v = a[1], a[2]
    both(case, "relu " .. tag, hl.nn.relu, "np.maximum(a, 0)", {v})
    both(case, "gelu " .. tag, hl.nn.gelu, "(0.5 * a * (1 + " .. erf .. "(a.astype(np.float64) / math.sqrt(2)))).astype(np.float32)", {v}, F32)
    both(case, "gelu approximate " .. tag, function(t) return hl.nn.gelu(t, true) end,
         "(0.5 * a * (1 + np.tanh(math.sqrt(2 / math.pi) * (a + 0.044715 * a.astype(np.float64) ** 3)))).astype(np.float32)", {v}, F32)
    both(case, "sigmoid " .. tag, hl.nn.sigmoid, "(1 / (1 + np.exp(-a.astype(np.float64)))).astype(np.float32)", {v}, F32)
    both(case, "softplus " .. tag, hl.nn.softplus, "np.logaddexp(0, a.astype(np.float64)).astype(np.float32)", {v}, F32)
    both(case, "silu " .. tag, hl.nn.silu, "(a / (1 + np.exp(-a.astype(np.float64)))).astype(np.float32)", {v}, F32)
  end
  local d = np.rand({4, 5}, -3, 3, "float64")
  both(case, "sigmoid float64", hl.nn.sigmoid, "1 / (1 + np.exp(-a))", {d}, {rtol = 1e-14, atol = 1e-15})
  both(case, "softplus float64", hl.nn.softplus, "np.logaddexp(0, a)", {d}, {rtol = 1e-14, atol = 1e-15})
  case("relu as a method", function() return r:relu() end, "np.maximum(a, 0)", {r})
  case("relu of int32 stays int32", function() return hl.nn.relu(hl.array({-2, 0, 3}, "int32")) end,
       "np.array([0, 0, 3], dtype=np.int32)", {})
end)

describe("nn activations: gradients", function()
  it("stay finite at the extremes (no inf * 0)", function()
    local x = hl.array({-1e4, -100, 0, 100, 1e4})
    for _, name in ipairs {"sigmoid", "softplus", "silu", "gelu", "relu"} do
      local g = hl.grad(function(t) return hl.sum(hl.nn[name](t)) end)(x)
      for i, v in ipairs(g:totable()) do
        assert(v == v and v > -math.huge and v < math.huge, name .. " gradient at element " .. i .. " is " .. tostring(v))
      end
    end
    -- the limits: sigmoid' -> 0 at both ends, softplus' -> 0 and 1
    local gs = hl.grad(function(t) return hl.sum(hl.nn.softplus(t)) end)(x):totable()
    assert.are.equal(0, gs[1])
    assert.are.equal(1, gs[5])
  end)
  it("are smooth at 0: second derivatives from autodiff match the formulas", function()
    local z = hl.array({0, 0.5, -2}, "float64")
    local s = 1 / (1 + hl.exp(-z))
    local function second(f) return hl.vmap(hl.grad(hl.grad(function(t) return f(t) end)))(z) end
    for _, c in ipairs {{"softplus", s * (1 - s)}, {"sigmoid", s * (1 - s) * (1 - 2 * s)}} do
      local d = hl.max(hl.abs(second(hl.nn[c[1]]) - c[2])):item()
      assert(d < 1e-12, c[1] .. "'' differs by " .. d)
    end
  end)
end)

---------------------------------------------------------------- conv2d and pooling

-- NumPy references over sliding windows: conv as an einsum, pools as max/mean of the windows
local function np_conv(stride, pad, bias)
  local e = string.format("np.einsum('nchwij,ocij->nohw', np.lib.stride_tricks.sliding_window_view(" ..
    "np.pad(a, ((0,0),(0,0),(%d,%d),(%d,%d))), b.shape[2:], axis=(2,3))[:, :, ::%d, ::%d], b)",
    pad[1], pad[1], pad[2], pad[2], stride[1], stride[2])
  if bias then e = e .. " + c.reshape(-1, 1, 1)" end
  return e
end
local function np_pool(kind, size, stride, pad, fill)
  return string.format("np.lib.stride_tricks.sliding_window_view(np.pad(a, ((0,0),(0,0),(%d,%d),(%d,%d)), " ..
    "constant_values=%s), (%d,%d), axis=(2,3))[:, :, ::%d, ::%d].%s(axis=(-2,-1))",
    pad[1], pad[1], pad[2], pad[2], fill, size[1], size[2], stride[1], stride[2], kind)
end

suite("nn.conv2d against NumPy", function(case)
  local configs = {
    {x = {2, 3, 8, 8}, w = {4, 3, 3, 3}},
    {x = {2, 3, 8, 8}, w = {4, 3, 3, 3}, stride = 2, padding = 1, bias = true},
    {x = {1, 1, 7, 9}, w = {2, 1, 2, 4}, stride = {1, 2}, padding = {0, 2}},
    {x = {3, 2, 5, 5}, w = {5, 2, 1, 1}, bias = true},
    {x = {1, 4, 6, 6}, w = {3, 4, 6, 6}},                               -- the window is the image
    {x = {2, 1, 4, 4}, w = {1, 1, 3, 3}, padding = 2},
  }
  for _, c in ipairs(configs) do
    local x, w = np.rand(c.x, -1, 1), np.rand(c.w, -1, 1)
    local b = np.rand({c.w[1]}, -1, 1)
    local s = type(c.stride) == "table" and c.stride or {c.stride or 1, c.stride or 1}
    local p = type(c.padding) == "table" and c.padding or {c.padding or 0, c.padding or 0}
    local name = string.format("x [%s] w [%s] stride {%d,%d} padding {%d,%d}%s", table.concat(c.x, ","),
                               table.concat(c.w, ","), s[1], s[2], p[1], p[2], c.bias and " bias" or "")
    local f = function(xx, ww, bb)
      return hl.nn.conv2d(xx, ww, {stride = c.stride, padding = c.padding, bias = c.bias and bb or nil})
    end
    both(case, name, f, np_conv(s, p, c.bias), {x, w, b}, {rtol = 1e-5, atol = 1e-5})
  end
  local xd, wd = np.rand({1, 2, 5, 5}, -1, 1, "float64"), np.rand({3, 2, 3, 3}, -1, 1, "float64")
  both(case, "float64", function(a, b) return hl.nn.conv2d(a, b, {padding = 1}) end, np_conv({1, 1}, {1, 1}),
       {xd, wd}, {rtol = 1e-12, atol = 1e-12})
end)

suite("nn pooling against NumPy", function(case)
  local configs = {
    {x = {2, 3, 8, 8}, size = 2},
    {x = {1, 2, 7, 7}, size = 3, stride = 2},
    {x = {1, 2, 6, 5}, size = {2, 3}, stride = {1, 2}},
    {x = {2, 1, 5, 5}, size = 3, stride = 2, padding = 1},
    {x = {1, 1, 4, 4}, size = 4},
  }
  for _, c in ipairs(configs) do
    local x = np.rand(c.x, -3, 3)
    local size = type(c.size) == "table" and c.size or {c.size, c.size}
    local s = type(c.stride) == "table" and c.stride or (c.stride and {c.stride, c.stride} or size)
    local p = c.padding and {c.padding, c.padding} or {0, 0}
    local name = string.format("x [%s] size {%d,%d} stride {%d,%d} padding {%d,%d}", table.concat(c.x, ","),
                               size[1], size[2], s[1], s[2], p[1], p[2])
    local o = {stride = c.stride, padding = c.padding}
    both(case, "max_pool2d " .. name, function(t) return hl.nn.max_pool2d(t, c.size, o) end,
         np_pool("max", size, s, p, "-np.inf"), {x})
    both(case, "avg_pool2d " .. name, function(t) return hl.nn.avg_pool2d(t, c.size, o) end,
         np_pool("mean", size, s, p, "0"), {x}, F32)
  end
  case("max_pool2d of int32 stays int32", function() return hl.nn.max_pool2d(hl.reshape(hl.arange(16, "int32"), {1, 1, 4, 4}), 2) end,
       "np.array([[[[5, 7], [13, 15]]]], dtype=np.int32)", {})
end)

-- central differences of a scalar loss (float64) with respect to argument i
local function fd_check(loss, args, i)
  local g = hl.grad(loss, i)(unpack(args))
  local x = args[i]
  local v = hl.reshape(x, {x.size}):totable()
  local gv = hl.reshape(g, {g.size}):totable()
  local worst = 0
  for k = 1, #v do
    local keep = v[k]
    local h = 1e-6
    local call = {unpack(args)}
    v[k] = keep + h
    call[i] = hl.reshape(hl.array(v, "float64"), x.shape)
    local up = loss(unpack(call)):item()
    v[k] = keep - h
    call[i] = hl.reshape(hl.array(v, "float64"), x.shape)
    local dn = loss(unpack(call)):item()
    v[k] = keep
    local fd = (up - dn) / (2 * h)
    worst = math.max(worst, math.abs(fd - gv[k]) / math.max(1, math.abs(fd)))
  end
  assert(worst < 1e-6, "gradient " .. i .. " differs from central differences by " .. worst)
  return g
end

describe("nn.conv2d and pooling: gradients against central differences", function()
  local x = np.rand({2, 2, 5, 5}, -1, 1, "float64")
  local w = np.rand({3, 2, 3, 3}, -1, 1, "float64")
  local b = np.rand({3}, -1, 1, "float64")
  local wt = np.rand({2, 3, 3, 3}, -1, 1, "float64")
  it("conv2d with stride, padding and bias: x, w and b", function()
    local loss = function(xx, ww, bb)
      return hl.sum(hl.nn.conv2d(xx, ww, {stride = 2, padding = 1, bias = bb}) * wt[{{}, {}, {1, 3}, {1, 3}}])
    end
    for i = 1, 3 do fd_check(loss, {x, w, b}, i) end
    -- the same gradients under jit
    local g = hl.grad(loss, {1, 2, 3})(x, w, b)
    local jg = hl.jit(hl.grad(loss, {1, 2, 3}))(x, w, b)
    for i = 1, 3 do assert(hl.max(hl.abs(g[i] - jg[i])):item() < 1e-12, "jit gradient " .. i) end
  end)
  it("max_pool2d and avg_pool2d", function()
    local w3, w2 = np.rand({2, 2, 3, 3}, -1, 1, "float64"), np.rand({2, 2, 2, 2}, -1, 1, "float64")
    fd_check(function(t) return hl.sum(hl.nn.max_pool2d(t, 3, {stride = 2, padding = 1}) * w3) end, {x}, 1)
    fd_check(function(t) return hl.sum(hl.nn.avg_pool2d(t, 2) * w2) end, {x}, 1)
  end)
end)

describe("nn.conv2d and pooling: errors", function()
  local x, w = hl.ones({1, 2, 5, 5}), hl.ones({3, 2, 3, 3})
  local function fails(words, f)
    local ok, err = pcall(f)
    assert.is_false(ok)
    assert.are.equal("string", type(err))
    for _, word in ipairs(words) do assert(err:find(word, 1, true), "error '" .. err .. "' lacks '" .. word .. "'") end
    assert(err:find("^halua: "), err)
  end
  it("name the op, the shapes and what is expected", function()
    fails({"halua: conv2d:", "NCHW", "[5,5]"}, function() hl.nn.conv2d(hl.ones({5, 5}), w) end)
    fails({"conv2d:", "(out, in, kh, kw)", "[3,3]"}, function() hl.nn.conv2d(x, hl.ones({3, 3})) end)
    fails({"conv2d:", "2 channels", "expect 4"}, function() hl.nn.conv2d(x, hl.ones({3, 4, 3, 3})) end)
    fails({"conv2d:", "bias", "[3]", "[4]"}, function() hl.nn.conv2d(x, w, {bias = hl.ones(4)}) end)
    fails({"conv2d:", "stride", "positive"}, function() hl.nn.conv2d(x, w, {stride = 0}) end)
    fails({"conv2d:", "padding", "non-negative"}, function() hl.nn.conv2d(x, w, {padding = -1}) end)
    fails({"conv2d:", "window does not fit"}, function() hl.nn.conv2d(x, hl.ones({3, 2, 6, 6})) end)
    fails({"conv2d:", "options must be a table"}, function() hl.nn.conv2d(x, w, 2) end)
    fails({"max_pool2d:", "size"}, function() hl.nn.max_pool2d(x, "2") end)
    fails({"max_pool2d:", "padding", "more than half"}, function() hl.nn.max_pool2d(x, 2, {padding = 2}) end)
    fails({"avg_pool2d:", "NCHW"}, function() hl.nn.avg_pool2d(hl.ones({2, 2}), 2) end)
    fails({"max_pool2d:", "float"}, function() hl.nn.max_pool2d(hl.ones({1, 1, 4, 4}, "int32"), 2, {padding = 1}) end)
  end)
end)

---------------------------------------------------------------- dropout

describe("nn.dropout", function()
  local key = hl.random.key(3)
  local x = hl.ones({200, 100})
  it("zeroes about `rate` of the elements and scales the rest by 1 / (1 - rate)", function()
    local y = hl.nn.dropout(key, x, 0.25)
    local zeros = hl.sum(hl.eq(y, 0)):item() / x.size
    assert(math.abs(zeros - 0.25) < 0.01, "fraction dropped " .. zeros)
    local kept = hl.sum(y):item() / (x.size - hl.sum(hl.eq(y, 0)):item())
    assert(math.abs(kept - 1 / 0.75) < 1e-6, "kept value " .. kept)
    assert(math.abs(hl.mean(y):item() - 1) < 0.02)
  end)
  it("is a pure function of the key: the same eagerly and under jit, different for another key", function()
    local a = hl.nn.dropout(key, x, 0.5)
    local b = hl.jit(function(k, t) return hl.nn.dropout(k, t, 0.5) end)(key, x)
    assert.are.equal(0, hl.sum(hl.ne(a, b)):item())
    local c = hl.nn.dropout(hl.random.key(4), x, 0.5)
    assert(hl.sum(hl.ne(a, c)):item() > 1000)
  end)
  it("with rate 0 returns x; its gradient is the mask over 1 - rate", function()
    assert.are.equal(x, hl.nn.dropout(key, x, 0))
    local g = hl.grad(function(t) return hl.sum(hl.nn.dropout(key, t, 0.5)) end)(x)
    local y = hl.nn.dropout(key, x, 0.5)
    assert.are.equal(0, hl.sum(hl.ne(g, y)):item())
  end)
  it("rejects a rate outside [0, 1)", function()
    for _, r in ipairs {1, -0.1, 2} do
      local ok, err = pcall(hl.nn.dropout, key, x, r)
      assert.is_false(ok)
      assert.are.equal("halua: dropout: rate must be a number in [0, 1), got " .. tostring(r), err)
    end
    local ok, err = pcall(hl.nn.dropout, key, x, "0.5")
    assert.is_false(ok)
    assert(err:find("rate must be a number", 1, true), err)
  end)
end)

---------------------------------------------------------------- losses

suite("nn losses against NumPy", function(case)
  local logits = np.rand({6, 5}, -3, 3)
  local labels = hl.array({1, 5, 3, 2, 2, 4}, "int32")
  local lse = "np.log(np.exp(a.astype(np.float64)).sum(-1))"
  both(case, "cross_entropy with class indices (1-based)", hl.nn.cross_entropy,
       "np.float32(np.mean(" .. lse .. " - a[np.arange(6), b - 1]))", {logits, labels}, F32)
  local probs = hl.nn.softmax(np.rand({6, 5}, -1, 1), -1)
  both(case, "cross_entropy with probabilities", hl.nn.cross_entropy,
       "np.float32(np.mean(-(b * (a - " .. lse .. "[:, None])).sum(-1)))", {logits, probs}, F32)
  local l3 = np.rand({2, 3, 4}, -2, 2)
  local y3 = hl.array({{1, 2, 3}, {4, 4, 1}}, "int64")
  both(case, "cross_entropy over a batch of sequences", hl.nn.cross_entropy,
       "np.float32(np.mean(np.log(np.exp(a.astype(np.float64)).sum(-1)) - np.take_along_axis(a, b[..., None] - 1, -1)[..., 0]))",
       {l3, y3}, F32)
  both(case, "cross_entropy of huge logits stays finite", hl.nn.cross_entropy, "np.float32(0.0)",
       {hl.array({{1e4, -1e4}}), hl.array({1}, "int32")}, F32)
  local p, t = np.rand({4, 3}, -1, 1), np.rand({4, 3}, -1, 1)
  both(case, "mse", hl.nn.mse, "np.float32(np.mean((a - b) ** 2))", {p, t}, F32)
  both(case, "mse broadcasting a row", hl.nn.mse, "np.float32(np.mean((a - b) ** 2))", {p, t[1]}, F32)
end)

describe("nn losses: gradients and errors", function()
  it("cross_entropy's gradient is (softmax - one_hot) / n", function()
    local logits = np.rand({4, 3}, -2, 2, "float64")
    local labels = hl.array({3, 1, 2, 3}, "int32")
    local g = hl.grad(hl.nn.cross_entropy)(logits, labels)
    local want = (hl.nn.softmax(logits, -1) - hl.one_hot(labels, 3, "float64")) / 4
    assert(hl.max(hl.abs(g - want)):item() < 1e-15)
    fd_check(function(l) return hl.nn.cross_entropy(l, labels) end, {logits}, 1)
  end)
  it("mse's gradient against central differences", function()
    local p, t = np.rand({3, 2}, -1, 1, "float64"), np.rand({3, 2}, -1, 1, "float64")
    fd_check(hl.nn.mse, {p, t}, 1)
    fd_check(hl.nn.mse, {p, t}, 2)
  end)
  it("errors name the op and the shapes", function()
    local function fails(words, f)
      local ok, err = pcall(f)
      assert.is_false(ok)
      for _, word in ipairs(words) do assert(err:find(word, 1, true), "error '" .. err .. "' lacks '" .. word .. "'") end
    end
    local l = hl.zeros({4, 3})
    fails({"halua: cross_entropy:", "label 4 is out of range 1..3", "1-based"}, function() hl.nn.cross_entropy(l, hl.array({1, 2, 3, 4}, "int32")) end)
    fails({"cross_entropy:", "label 0 is out of range"}, function() hl.nn.cross_entropy(l, hl.array({0, 1, 1, 1}, "int32")) end)
    fails({"cross_entropy:", "[3]", "[4,3]"}, function() hl.nn.cross_entropy(l, hl.array({1, 2, 3}, "int32")) end)
    fails({"cross_entropy:", "[4,3]", "[4,2]"}, function() hl.nn.cross_entropy(l, hl.zeros({4, 2})) end)
    fails({"cross_entropy:", "integer class indices", "bool"}, function() hl.nn.cross_entropy(l, hl.array({true, false, true, true})) end)
    fails({"cross_entropy:", "class axis"}, function() hl.nn.cross_entropy(hl.array(1), hl.array(1, "int32")) end)
    fails({"halua: mse:", "broadcast"}, function() hl.nn.mse(hl.zeros(3), hl.zeros(4)) end)
  end)
end)

---------------------------------------------------------------- initialisers

describe("nn.init", function()
  local key = hl.random.key(11)
  it("glorot: uniform on +-sqrt(6 / (fan_in + fan_out)), dense and convolution fans", function()
    for _, c in ipairs {{{300, 200}, 300, 200}, {{32, 16, 3, 3}, 16 * 9, 32 * 9}, {{1000}, 1000, 1000}} do
      local w = hl.nn.init.glorot(key, c[1])
      local limit = math.sqrt(6 / (c[2] + c[3]))
      assert.are.same(c[1], w.shape)
      assert.are.equal("float32", w.dtype)
      assert(hl.max(hl.abs(w)):item() <= limit)
      assert(hl.max(hl.abs(w)):item() > 0.95 * limit)
      local var = hl.var(w):item()
      assert(math.abs(var / (limit * limit / 3) - 1) < 0.1, "variance " .. var)
    end
    assert.are.equal("float64", hl.nn.init.glorot(key, {3, 3}, "float64").dtype)
  end)
  it("normal: mean 0 and the given standard deviation, 0.01 by default", function()
    local w = hl.nn.init.normal(key, {400, 300})
    assert(math.abs(hl.std(w):item() / 0.01 - 1) < 0.02)
    assert(math.abs(hl.mean(w):item()) < 1e-3 * 0.01 * 100)
    local w2 = hl.nn.init.normal(key, {400, 300}, 2, "float64")
    assert.are.equal("float64", w2.dtype)
    assert(math.abs(hl.std(w2):item() / 2 - 1) < 0.02)
  end)
  it("are pure functions of the key and reject bad shapes", function()
    assert.are.equal(0, hl.sum(hl.ne(hl.nn.init.glorot(key, {5, 5}), hl.nn.init.glorot(key, {5, 5}))):item())
    local ok, err = pcall(hl.nn.init.glorot, key, {3, -1})
    assert.is_false(ok)
    assert(err:find("halua: nn.init.glorot: shape", 1, true), err)
    ok, err = pcall(hl.nn.init.normal, key, {3}, -1)
    assert.is_false(ok)
    assert(err:find("stddev must be a non-negative number", 1, true), err)
  end)
end)
