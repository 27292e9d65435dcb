-- hl.nn layers: N-d and transposed convolutions, layer/rms/batch norm, embedding, attention and
-- the LSTM/GRU cells: values against NumPy references written from PyTorch's and JAX's
-- definitions (eager and under jit), gradients against central differences, vmap, and errors.
local hl = require "halua"
local np = require "support.numpy"
local suite = require "support.suite"

math.randomseed(2201)

local function both(case, name, f, expr, inputs, opts)
  case(name, function() return f(unpack(inputs)) end, expr, inputs, opts)
  case(name .. " (jit)", function() return hl.jit(f)(unpack(inputs)) end, expr, inputs, opts)
end

-- the NumPy references as Python functions, defined once per expression by exec: direct loop
-- sums over the kernel offsets (PyTorch's definitions of Conv and ConvTranspose, groups included)
local PY = [[
def conv(x, w, s, d, lo, hi, g):
    t = x.dtype
    x = x.astype(np.float64); w = w.astype(np.float64)
    n = x.ndim - 2
    xp = np.pad(x, [(0, 0), (0, 0)] + list(zip(lo, hi)))
    O, Cg = w.shape[:2]; k = w.shape[2:]; Og = O // g
    out = [(xp.shape[2 + i] - d[i] * (k[i] - 1) - 1) // s[i] + 1 for i in range(n)]
    y = np.zeros((x.shape[0], O) + tuple(out))
    for idx in np.ndindex(*k):
        sl = tuple(slice(idx[i] * d[i], idx[i] * d[i] + s[i] * (out[i] - 1) + 1, s[i]) for i in range(n))
        for gi in range(g):
            patch = xp[(slice(None), slice(gi * Cg, (gi + 1) * Cg)) + sl]
            y[:, gi * Og:(gi + 1) * Og] += np.einsum("nc...,oc->no...", patch, w[(slice(gi * Og, (gi + 1) * Og), slice(None)) + idx])
    return y.astype(t)
def convt(x, w, s, d, p, op, g):
    t = x.dtype
    x = x.astype(np.float64); w = w.astype(np.float64)
    n = x.ndim - 2
    Cg, Og = w.shape[0] // g, w.shape[1]; k = w.shape[2:]; L = x.shape[2:]
    full = np.zeros((x.shape[0], g * Og) + tuple((L[i] - 1) * s[i] + d[i] * (k[i] - 1) + 1 + op[i] for i in range(n)))
    for idx in np.ndindex(*k):
        sl = tuple(slice(idx[i] * d[i], idx[i] * d[i] + s[i] * (L[i] - 1) + 1, s[i]) for i in range(n))
        for gi in range(g):
            full[(slice(None), slice(gi * Og, (gi + 1) * Og)) + sl] += np.einsum("nc...,co->no...", x[:, gi * Cg:(gi + 1) * Cg], w[(slice(gi * Cg, (gi + 1) * Cg), slice(None)) + idx])
    return full[(slice(None), slice(None)) + tuple(slice(p[i], full.shape[2 + i] - p[i]) for i in range(n))].astype(t)
def attn(q, k, v, scale=None, bias=None, mask=None, causal=False):
    t = q.dtype
    q = q.astype(np.float64); k = k.astype(np.float64); v = v.astype(np.float64)
    r = q.shape[-2] // k.shape[-2]
    k = np.repeat(k, r, axis=-2); v = np.repeat(v, r, axis=-2)
    scale = 1 / np.sqrt(q.shape[-1]) if scale is None else scale
    z = np.einsum("...tnh,...snh->...nts", q, k) * scale
    if bias is not None: z = z + bias
    keep = np.ones(z.shape, bool)
    if mask is not None: keep = keep & mask
    if causal: keep = keep & np.tril(np.ones(z.shape[-2:], bool))
    z = np.where(keep, z, -1e300)
    e = np.exp(z - z.max(-1, keepdims=True))
    return np.einsum("...nts,...snh->...tnh", e / e.sum(-1, keepdims=True), v).astype(t)
def sig(z):
    return 1 / (1 + np.exp(-z))
def lstm(x, h, c, wi, wh, bi, bh):
    z = x @ wi.T + bi + h @ wh.T + bh
    i, f, g, o = np.split(z, 4, axis=-1)
    c2 = sig(f) * c + sig(i) * np.tanh(g)
    return sig(o) * np.tanh(c2), c2
def gru(x, h, wi, wh, bi, bh):
    a = x @ wi.T + bi; b = h @ wh.T + bh
    ar, az, an = np.split(a, 3, axis=-1); br, bz, bn = np.split(b, 3, axis=-1)
    r = sig(ar + br); z = sig(az + bz); n = np.tanh(an + r * bn)
    return (1 - z) * n + z * h
]]
local function py(fn, args)
  return "(exec('" .. PY:gsub("\n", "\\n") .. "', (G := {'np': np})) or G['" .. fn .. "'])(" .. args .. ")"
end
local function tup(t)
  local s = {}
  for i, v in ipairs(t) do s[i] = tostring(v) end
  return "(" .. table.concat(s, ", ") .. ",)"
end
local function rep(v, n)
  if type(v) == "table" then return v end
  local t = {}
  for i = 1, n do t[i] = v end
  return t
end

---------------------------------------------------------------- convolutions

suite("nn.conv1d / conv2d / conv3d against NumPy's loop sums", function(case)
  local configs = {
    {x = {2, 3, 11}, w = {4, 3, 3}},
    {x = {2, 4, 13}, w = {6, 2, 3}, stride = 2, padding = 2, dilation = 2, groups = 2, bias = true},
    {x = {1, 2, 9}, w = {3, 2, 4}, padding = {{1, 3}}},
    {x = {1, 2, 9}, w = {3, 2, 4}, padding = {2, 0}},                   -- {lo, hi} alone in 1-D
    {x = {2, 3, 8, 8}, w = {4, 3, 3, 3}, stride = 2, padding = 1, bias = true},
    {x = {1, 4, 9, 7}, w = {4, 1, 3, 2}, dilation = {2, 3}, groups = 4},   -- depthwise
    {x = {2, 6, 7, 7}, w = {9, 2, 3, 3}, groups = 3, stride = {2, 1}, padding = {{0, 2}, {1, 1}}},
    {x = {1, 2, 7, 6}, w = {3, 2, 3, 2}, padding = "same"},
    {x = {1, 2, 7, 6}, w = {3, 2, 4, 3}, padding = "same", stride = 2, dilation = {1, 2}},
    {x = {1, 2, 7, 6}, w = {3, 2, 3, 3}, padding = "valid"},
    {x = {2, 2, 5, 6, 4}, w = {3, 2, 2, 3, 2}, stride = {1, 2, 1}, padding = 1, bias = true},
    {x = {1, 4, 6, 5, 5}, w = {4, 2, 3, 2, 2}, groups = 2, dilation = 2, padding = "same"},
  }
  for _, c in ipairs(configs) do
    local n = #c.x - 2
    local x, w, b = np.rand(c.x, -1, 1), np.rand(c.w, -1, 1), np.rand({c.w[1]}, -1, 1)
    local s, d = rep(c.stride or 1, n), rep(c.dilation or 1, n)
    local lo, hi = {}, {}
    local pad = c.padding or 0
    if pad == "same" then
      for i = 1, n do
        local ke = d[i] * (c.w[i + 2] - 1) + 1
        local tot = math.max((math.ceil(c.x[i + 2] / s[i]) - 1) * s[i] + ke - c.x[i + 2], 0)
        lo[i], hi[i] = math.floor(tot / 2), tot - math.floor(tot / 2)
      end
    elseif pad == "valid" then
      for i = 1, n do lo[i], hi[i] = 0, 0 end
    elseif type(pad) == "table" and (type(pad[1]) == "table" or n == 1) then
      local pp = type(pad[1]) == "table" and pad or {pad}
      for i = 1, n do lo[i], hi[i] = pp[i][1], pp[i][2] end
    else
      local pp = rep(pad, n)
      for i = 1, n do lo[i], hi[i] = pp[i], pp[i] end
    end
    local g = c.groups or 1
    local expr = py("conv", "a, b, " .. tup(s) .. ", " .. tup(d) .. ", " .. tup(lo) .. ", " .. tup(hi) .. ", " .. g)
    if c.bias then expr = expr .. " + c.reshape((-1,) + (1,) * " .. n .. ")" end
    local op = ({"conv1d", "conv2d", "conv3d"})[n]
    local name = string.format("%s x [%s] w [%s] stride %s dilation %s padding %s groups %d%s", op, table.concat(c.x, ","),
      table.concat(c.w, ","), tup(s), tup(d), type(pad) == "string" and pad or tup(lo) .. tup(hi), g, c.bias and " bias" or "")
    local f = function(xx, ww, bb)
      return hl.nn[op](xx, ww, {stride = c.stride, padding = c.padding, dilation = c.dilation, groups = c.groups,
                                bias = c.bias and bb or nil})
    end
    both(case, name, f, expr, {x, w, b}, {rtol = 1e-5, atol = 1e-5})
    case(name .. " via nn.conv", function() return hl.nn.conv(x, w, {stride = c.stride, padding = c.padding,
      dilation = c.dilation, groups = c.groups, bias = c.bias and b or nil}) end, expr, {x, w, b}, {rtol = 1e-5, atol = 1e-5})
  end
  local xd, wd = np.rand({2, 4, 6, 5}, -1, 1, "float64"), np.rand({4, 2, 3, 3}, -1, 1, "float64")
  both(case, "conv2d float64 with groups and dilation", function(a, b2) return hl.nn.conv2d(a, b2, {groups = 2, dilation = 2, padding = 2}) end,
       py("conv", "a, b, (1, 1), (2, 2), (2, 2), (2, 2), 2"), {xd, wd}, {rtol = 1e-12, atol = 1e-12})
end)

suite("nn.conv_transpose1d / 2d / 3d against PyTorch's definition in NumPy", function(case)
  local configs = {
    {x = {2, 3, 5}, w = {3, 4, 3}},
    {x = {2, 4, 6}, w = {4, 3, 3}, stride = 2, padding = 1, output_padding = 1, groups = 2, bias = true},
    {x = {1, 2, 4}, w = {2, 2, 2}, stride = 3, dilation = 2, output_padding = 2},
    {x = {1, 2, 4, 5}, w = {2, 3, 3, 3}, stride = 2, padding = 1, bias = true},
    {x = {2, 4, 3, 4}, w = {4, 1, 2, 3}, stride = {2, 1}, padding = {0, 1}, dilation = {1, 2}, groups = 4},
    {x = {1, 2, 3, 3}, w = {2, 2, 3, 3}, stride = 2, padding = 2, output_padding = 1},
    {x = {1, 2, 3, 2, 3}, w = {2, 3, 2, 2, 2}, stride = 2, padding = {0, 1, 0}, bias = true},
    {x = {1, 2, 5}, w = {2, 2, 2}, stride = 3, padding = 2},             -- padding past dilation * (k - 1)
  }
  for _, c in ipairs(configs) do
    local n = #c.x - 2
    local x, w = np.rand(c.x, -1, 1), np.rand(c.w, -1, 1)
    local g = c.groups or 1
    local b = np.rand({c.w[2] * g}, -1, 1)
    local s, d, p, op = rep(c.stride or 1, n), rep(c.dilation or 1, n), rep(c.padding or 0, n), rep(c.output_padding or 0, n)
    local expr = py("convt", "a, b, " .. tup(s) .. ", " .. tup(d) .. ", " .. tup(p) .. ", " .. tup(op) .. ", " .. g)
    if c.bias then expr = expr .. " + c.reshape((-1,) + (1,) * " .. n .. ")" end
    local name = string.format("conv_transpose%dd x [%s] w [%s] stride %s dilation %s padding %s output_padding %s groups %d",
      n, table.concat(c.x, ","), table.concat(c.w, ","), tup(s), tup(d), tup(p), tup(op), g)
    local o = {stride = c.stride, padding = c.padding, dilation = c.dilation, groups = c.groups,
               output_padding = c.output_padding}
    local f = function(xx, ww, bb)
      o.bias = c.bias and bb or nil
      return hl.nn["conv_transpose" .. n .. "d"](xx, ww, o)
    end
    both(case, name, f, expr, {x, w, b}, {rtol = 1e-5, atol = 1e-5})
    case(name .. " via nn.conv_transpose", function() return hl.nn.conv_transpose(x, w, {stride = c.stride,
      padding = c.padding, dilation = c.dilation, groups = c.groups, output_padding = c.output_padding,
      bias = c.bias and b or nil}) end, expr, {x, w, b}, {rtol = 1e-5, atol = 1e-5})
  end
end)

-- central differences of a scalar loss (float64) with respect to argument i
local function fd_check(loss, args, i, tol)
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
  assert(worst < (tol or 1e-6), "gradient " .. i .. " differs from central differences by " .. worst)
  return g
end

local function max_diff(a, b) return hl.max(hl.abs(a - b)):item() end

describe("nn convolutions: gradients, jit(grad) and vmap", function()
  it("conv1d with stride, dilation, groups and bias: x, w and b against central differences", function()
    local x, w, b = np.rand({2, 4, 9}, -1, 1, "float64"), np.rand({4, 2, 3}, -1, 1, "float64"), np.rand({4}, -1, 1, "float64")
    local probe = np.rand({2, 4, 4}, -1, 1, "float64")
    local loss = function(xx, ww, bb)
      return hl.sum(hl.nn.conv1d(xx, ww, {stride = 2, padding = 1, dilation = 2, groups = 2, bias = bb}) * probe)
    end
    for i = 1, 3 do fd_check(loss, {x, w, b}, i) end
    local g, jg = hl.grad(loss, {1, 2, 3})(x, w, b), hl.jit(hl.grad(loss, {1, 2, 3}))(x, w, b)
    for i = 1, 3 do assert(max_diff(g[i], jg[i]) < 1e-12, "jit gradient " .. i) end
  end)
  it("conv3d and conv_transpose2d: x and w against central differences", function()
    local x, w = np.rand({1, 2, 3, 4, 3}, -1, 1, "float64"), np.rand({2, 2, 2, 2, 2}, -1, 1, "float64")
    local p3 = np.rand({1, 2, 3, 2, 3}, -1, 1, "float64")
    local l3 = function(xx, ww) return hl.sum(hl.nn.conv3d(xx, ww, {stride = {1, 2, 1}, padding = {{1, 0}, {0, 0}, {0, 1}}}) * p3) end
    fd_check(l3, {x, w}, 1); fd_check(l3, {x, w}, 2)
    local xt, wt = np.rand({1, 2, 3, 3}, -1, 1, "float64"), np.rand({2, 3, 3, 2}, -1, 1, "float64")
    local pt = np.rand({1, 3, 6, 7}, -1, 1, "float64")
    local lt = function(xx, ww) return hl.sum(hl.nn.conv_transpose2d(xx, ww, {stride = 2, padding = {1, 0}, output_padding = 1}) * pt) end
    fd_check(lt, {xt, wt}, 1); fd_check(lt, {xt, wt}, 2)
  end)
  it("conv_transpose is the transpose of conv: <conv(x, w), y> = <x, conv_transpose(y, w)>", function()
    local x, w = np.rand({2, 4, 9, 8}, -1, 1, "float64"), np.rand({6, 2, 3, 2}, -1, 1, "float64")
    local o = {stride = {2, 3}, padding = {1, 0}, dilation = {1, 2}, groups = 2}
    local y = hl.nn.conv2d(x, w, o)
    local r = hl.array(np.rand(y.shape, -1, 1, "float64"))
    local back = hl.nn.conv_transpose2d(r, w, {stride = {2, 3}, padding = {1, 0}, dilation = {1, 2}, groups = 2,
                                               output_padding = {0, 2}})
    assert.are.same(x.shape, back.shape)
    local lhs, rhs = hl.sum(y * r):item(), hl.sum(x * back):item()
    assert(math.abs(lhs - rhs) < 1e-10 * math.max(1, math.abs(lhs)), lhs .. " vs " .. rhs)
    -- and the gradient of conv with respect to x is that transpose
    local gx = hl.grad(function(t) return hl.sum(hl.nn.conv2d(t, w, o) * r) end)(x)
    assert(max_diff(gx, back) < 1e-12)
  end)
  it("vmap over a leading axis equals the loop", function()
    local xs, w = np.rand({3, 2, 2, 6, 5}, -1, 1), np.rand({4, 2, 3, 3}, -1, 1)
    local f = function(x) return hl.nn.conv2d(x, w, {padding = "same", dilation = 2}) end
    local got = hl.vmap(f)(xs)
    for i = 1, 3 do assert(max_diff(got[i], f(xs[i])) < 1e-5, "slice " .. i) end
    local ft = function(x) return hl.nn.conv_transpose1d(x, hl.ones({2, 3, 2}), {stride = 2}) end
    local x1 = np.rand({4, 1, 2, 5}, -1, 1)
    local gt = hl.vmap(ft)(x1)
    for i = 1, 4 do assert(max_diff(gt[i], ft(x1[i])) < 1e-5) end
    -- the weights mapped too
    local ws = np.rand({3, 4, 2, 3, 3}, -1, 1)
    local gw = hl.vmap(function(ww) return hl.nn.conv2d(xs[1], ww, {groups = 1}) end)(ws)
    for i = 1, 3 do assert(max_diff(gw[i], hl.nn.conv2d(xs[1], ws[i])) < 1e-5) end
  end)
end)

describe("nn convolutions: errors", function()
  local function fails(words, f)
    local ok, err = pcall(f)
    assert.is_false(ok)
    assert.are.equal("string", type(err))
    assert(err:find("^halua: "), err)
    for _, word in ipairs(words) do assert(err:find(word, 1, true), "error '" .. err .. "' lacks '" .. word .. "'") end
  end
  local x1, x3 = hl.ones({1, 4, 8}), hl.ones({1, 2, 4, 4, 4})
  it("name the op, the shapes and the fix", function()
    fails({"conv1d:", "NCW (3-D)", "[4,8]"}, function() hl.nn.conv1d(hl.ones({4, 8}), hl.ones({2, 4, 3})) end)
    fails({"conv3d:", "NCDHW (5-D)"}, function() hl.nn.conv3d(x1, hl.ones({2, 4, 3})) end)
    fails({"conv3d:", "(out, in, kd, kh, kw)", "[2,2,3]"}, function() hl.nn.conv3d(x3, hl.ones({2, 2, 3})) end)
    fails({"conv1d:", "4 channels", "groups = 2", "expect 6"}, function() hl.nn.conv1d(x1, hl.ones({2, 3, 3}), {groups = 2}) end)
    fails({"conv1d:", "3 output channels", "groups = 2"}, function() hl.nn.conv1d(x1, hl.ones({3, 2, 3}), {groups = 2}) end)
    fails({"conv1d:", "groups must be a positive integer"}, function() hl.nn.conv1d(x1, hl.ones({2, 4, 3}), {groups = 0}) end)
    fails({"conv2d:", "dilation", "positive"}, function() hl.nn.conv2d(hl.ones({1, 1, 5, 5}), hl.ones({1, 1, 2, 2}), {dilation = 0}) end)
    fails({"conv2d:", "window (dilated to 7) does not fit"}, function() hl.nn.conv2d(hl.ones({1, 1, 5, 5}), hl.ones({1, 1, 3, 3}), {dilation = 3}) end)
    fails({"conv1d:", "padding", "\"same\" or \"valid\"", "\"full\""}, function() hl.nn.conv1d(x1, hl.ones({2, 4, 3}), {padding = "full"}) end)
    fails({"conv2d:", "padding needs 2 {lo, hi} pairs"}, function() hl.nn.conv2d(hl.ones({1, 1, 5, 5}), hl.ones({1, 1, 2, 2}), {padding = {{1, 1}}}) end)
    fails({"conv3d:", "stride must be a number or {d, h, w}"}, function() hl.nn.conv3d(x3, hl.ones({1, 2, 2, 2, 2}), {stride = {1, 2}}) end)
    fails({"conv1d:", "unknown option 'padding_mode'", "dilation"}, function() hl.nn.conv1d(x1, hl.ones({2, 4, 3}), {padding_mode = "zeros"}) end)
    fails({"conv:", "1 to 3 spatial axes"}, function() hl.nn.conv(x1, hl.ones({2, 4})) end)
    fails({"conv_transpose1d:", "4 channels", "expect 2", "(in, out, kw)"}, function() hl.nn.conv_transpose1d(x1, hl.ones({2, 4, 3})) end)
    fails({"conv_transpose1d:", "output_padding 2 must be smaller"}, function() hl.nn.conv_transpose1d(x1, hl.ones({4, 1, 3}), {stride = 2, output_padding = 2}) end)
    fails({"conv_transpose2d:", "unknown option", "output_padding"}, function() hl.nn.conv_transpose2d(hl.ones({1, 1, 3, 3}), hl.ones({1, 1, 2, 2}), {outpad = 1}) end)
    fails({"conv_transpose1d:", "padding 3 leaves spatial axis 1 of the output -4 long", "less padding"},
          function() hl.nn.conv_transpose1d(hl.ones({1, 2, 1}), hl.ones({2, 2, 2}), {padding = 3}) end)
    fails({"conv_transpose1d:", "bias must have shape [2]"}, function() hl.nn.conv_transpose1d(x1, hl.ones({4, 1, 3}), {groups = 2, bias = hl.ones(3)}) end)
  end)
  it("conv2d keeps its dilation option strict (it used to be ignored)", function()
    local x, w = hl.arange(25):astype("float32"):reshape({1, 1, 5, 5}), hl.ones({1, 1, 2, 2})
    local y = hl.nn.conv2d(x, w, {dilation = 2})
    assert.are.same({1, 1, 3, 3}, y.shape)
    assert.are.equal(0 + 2 + 10 + 12, y[{1, 1, 1, 1}]:item())
  end)
end)

---------------------------------------------------------------- normalisation

local LN = "((a.astype(np.float64) - a.mean(%s, keepdims=True)) / np.sqrt(a.astype(np.float64).var(%s, keepdims=True) + %s))"

suite("nn.layer_norm, rms_norm and batch_norm against NumPy", function(case)
  for _, dt in ipairs {"float32", "float64"} do
    local tol = dt == "float32" and {rtol = 1e-5, atol = 1e-5} or {rtol = 1e-12, atol = 1e-12}
    local x = np.rand({3, 4, 6}, -2, 3, dt)
    local g, b = np.rand({6}, 0.5, 1.5, dt), np.rand({6}, -1, 1, dt)
    both(case, "layer_norm last axis " .. dt, function(t) return hl.nn.layer_norm(t) end,
         "(" .. LN:format("-1", "-1", "1e-5") .. ").astype(a.dtype)", {x}, tol)
    both(case, "layer_norm with gamma and beta " .. dt, function(t, gg, bb) return hl.nn.layer_norm(t, gg, bb) end,
         "(" .. LN:format("-1", "-1", "1e-5") .. " * b + c).astype(a.dtype)", {x, g, b}, tol)
    local g2 = np.rand({4, 6}, 0.5, 1.5, dt)
    both(case, "layer_norm over axes {2, 3}, eps 0.1, gamma [4,6] " .. dt,
         function(t, gg) return hl.nn.layer_norm(t, gg, {axis = {2, -1}, eps = 0.1}) end,
         "(" .. LN:format("(1, 2)", "(1, 2)", "0.1") .. " * b).astype(a.dtype)", {x, g2}, tol)
    local g3 = np.rand({4}, 0.5, 1.5, dt)
    both(case, "layer_norm over the middle axis, gamma [4] " .. dt,
         function(t, gg) return hl.nn.layer_norm(t, gg, nil, {axis = 2}) end,
         "(" .. LN:format("1", "1", "1e-5") .. " * b[:, None]).astype(a.dtype)", {x, g3}, tol)
    both(case, "rms_norm " .. dt, function(t, gg) return hl.nn.rms_norm(t, gg) end,
         "(a / np.sqrt((a.astype(np.float64) ** 2).mean(-1, keepdims=True) + 1e-6) * b).astype(a.dtype)", {x, g}, tol)
    both(case, "rms_norm axis 1, eps 0.5 " .. dt, function(t) return hl.nn.rms_norm(t, {axis = 1, eps = 0.5}) end,
         "(a / np.sqrt((a.astype(np.float64) ** 2).mean(0, keepdims=True) + 0.5)).astype(a.dtype)", {x}, tol)
    -- batch_norm: NCHW, statistics over N, H, W
    local xb = np.rand({4, 3, 5, 2}, -2, 3, dt)
    local gb, bb, rm, rv = np.rand({3}, 0.5, 1.5, dt), np.rand({3}, -1, 1, dt), np.rand({3}, -1, 1, dt), np.rand({3}, 0.5, 2, dt)
    local BN = "((a.astype(np.float64) - a.mean((0, 2, 3), keepdims=True)) / np.sqrt(a.astype(np.float64).var((0, 2, 3), keepdims=True) + 1e-5) * b[:, None, None] + c[:, None, None]).astype(a.dtype)"
    both(case, "batch_norm train NCHW " .. dt, function(t, g1, b1, m, v)
      return (hl.nn.batch_norm(t, g1, b1, {mean = m, var = v})) end, BN, {xb, gb, bb, rm, rv}, tol)
    both(case, "batch_norm train: running mean (momentum 0.1) " .. dt, function(t, g1, b1, m, v)
      local _, st = hl.nn.batch_norm(t, g1, b1, {mean = m, var = v}); return st.mean end,
      "(0.9 * d + 0.1 * a.mean((0, 2, 3))).astype(a.dtype)", {xb, gb, bb, rm, rv}, tol)
    both(case, "batch_norm train: running var, unbiased, momentum 0.3 " .. dt, function(t, g1, b1, m, v)
      local _, st = hl.nn.batch_norm(t, g1, b1, {mean = m, var = v}, {momentum = 0.3}); return st.var end,
      "(0.7 * e + 0.3 * a.astype(np.float64).var((0, 2, 3), ddof=1)).astype(a.dtype)", {xb, gb, bb, rm, rv}, tol)
    both(case, "batch_norm eval uses the running statistics " .. dt, function(t, g1, b1, m, v)
      return (hl.nn.batch_norm(t, g1, b1, {mean = m, var = v}, {train = false, eps = 1e-3})) end,
      "((a - d[:, None, None]) / np.sqrt(e[:, None, None] + 1e-3) * b[:, None, None] + c[:, None, None]).astype(a.dtype)",
      {xb, gb, bb, rm, rv}, tol)
    local xf = np.rand({6, 5}, -2, 3, dt)
    both(case, "batch_norm of (N, features), no affine, features last " .. dt, function(t)
      return (hl.nn.batch_norm(t, nil, nil, nil, {axis = -1})) end,
      "((a - a.mean(0)) / np.sqrt(a.astype(np.float64).var(0) + 1e-5)).astype(a.dtype)", {xf}, tol)
  end
end)

describe("nn norms: gradients, vmap and errors", function()
  it("gradients against central differences", function()
    local x = np.rand({3, 5}, -2, 2, "float64")
    local g, b = np.rand({5}, 0.5, 1.5, "float64"), np.rand({5}, -1, 1, "float64")
    local p = np.rand({3, 5}, -1, 1, "float64")
    local ln = function(t, gg, bb) return hl.sum(hl.nn.layer_norm(t, gg, bb) * p) end
    for i = 1, 3 do fd_check(ln, {x, g, b}, i) end
    local rn = function(t, gg) return hl.sum(hl.nn.rms_norm(t, gg) * p) end
    for i = 1, 2 do fd_check(rn, {x, g}, i) end
    local xb = np.rand({4, 5, 2}, -2, 2, "float64")
    local pb = np.rand({4, 5, 2}, -1, 1, "float64")
    local bn = function(t, gg, bb) return hl.sum((hl.nn.batch_norm(t, gg, bb, nil)) * pb) end
    for i = 1, 3 do fd_check(bn, {xb, g, b}, i) end
    local jg = hl.jit(hl.grad(bn, {1, 2, 3}))(xb, g, b)
    local eg = hl.grad(bn, {1, 2, 3})(xb, g, b)
    for i = 1, 3 do assert(max_diff(jg[i], eg[i]) < 1e-12) end
  end)
  it("vmap over a leading axis equals the loop, and batch_norm's state comes back per slice", function()
    local xs = np.rand({3, 4, 6}, -1, 1)
    local got = hl.vmap(function(t) return hl.nn.layer_norm(t) end)(xs)
    for i = 1, 3 do assert(max_diff(got[i], hl.nn.layer_norm(xs[i])) < 1e-6) end
    local bs = np.rand({2, 5, 3}, -1, 1)
    local y, st = hl.vmap(function(t) return hl.nn.batch_norm(t, nil, nil, nil) end)(bs)
    for i = 1, 2 do
      local yi, si = hl.nn.batch_norm(bs[i], nil, nil, nil)
      assert(max_diff(y[i], yi) < 1e-5)
      assert(max_diff(st.var[i], si.var) < 1e-5)
    end
  end)
  it("errors name the op, the shapes and the options", function()
    local function fails(words, f)
      local ok, err = pcall(f)
      assert.is_false(ok)
      assert(err:find("^halua: "), err)
      for _, word in ipairs(words) do assert(err:find(word, 1, true), "error '" .. err .. "' lacks '" .. word .. "'") end
    end
    local x = hl.ones({2, 3, 4})
    fails({"layer_norm:", "gamma", "[4]", "[5]"}, function() hl.nn.layer_norm(x, hl.ones(5)) end)
    fails({"layer_norm:", "axis 4 is out of range", "1-based"}, function() hl.nn.layer_norm(x, {axis = 4}) end)
    fails({"layer_norm:", "unknown option 'epsilon'", "axis, eps"}, function() hl.nn.layer_norm(x, {epsilon = 1}) end)
    fails({"layer_norm:", "expected (x [, gamma [, beta]] [, opts])"}, function() hl.nn.layer_norm(x, hl.ones(4), hl.ones(4), hl.ones(4)) end)
    fails({"rms_norm:", "eps must be a non-negative number"}, function() hl.nn.rms_norm(x, {eps = -1}) end)
    fails({"batch_norm:", "gamma must have shape [3]", "axis 2"}, function() hl.nn.batch_norm(x, hl.ones(4)) end)
    fails({"batch_norm:", "state.var must have shape [3]"}, function() hl.nn.batch_norm(x, nil, nil, {mean = hl.zeros(3), var = hl.ones(2)}) end)
    fails({"batch_norm:", "unknown option 'use_running_average'", "train"}, function() hl.nn.batch_norm(x, nil, nil, nil, {use_running_average = true}) end)
    fails({"batch_norm:", "momentum must be a number in [0, 1]"}, function() hl.nn.batch_norm(x, nil, nil, nil, {momentum = 2}) end)
    fails({"batch_norm:", "batch axis and a feature axis", "[3]"}, function() hl.nn.batch_norm(hl.ones(3), nil, nil, nil) end)
    fails({"batch_norm:", "more than one value per feature"}, function() hl.nn.batch_norm(hl.ones({1, 3}), nil, nil, nil) end)
  end)
end)

---------------------------------------------------------------- embedding

suite("nn.embedding against NumPy", function(case)
  for _, dt in ipairs {"float32", "float64"} do
    local tbl = np.rand({7, 3}, -1, 1, dt)
    local ids = hl.array({{1, 7, 3}, {2, 2, 5}}, "int32")
    both(case, "ids [2,3] " .. dt, hl.nn.embedding, "a[b - 1]", {tbl, ids})
    both(case, "int64 ids [4] " .. dt, hl.nn.embedding, "a[b - 1]", {tbl, hl.array({4, 1, 1, 6}, "int64")})
  end
  case("a Lua list of ids", function() return hl.nn.embedding(hl.reshape(hl.arange(6), {3, 2}), {3, 1}) end,
       "np.array([[4, 5], [0, 1]], dtype=np.float32)", {}, {dtype = false})
end)

describe("nn.embedding: gradient, vmap and errors", function()
  it("the gradient is a scatter-add of the cotangents into the table's rows", function()
    local tbl = np.rand({5, 2}, -1, 1, "float64")
    local ids = hl.array({2, 4, 2, 2}, "int32")
    local ct = hl.array({{1, 2}, {3, 4}, {5, 6}, {7, 8}}, "float64")
    local f = function(t) return hl.sum(hl.nn.embedding(t, ids) * ct) end
    local want = {{0, 0}, {13, 16}, {0, 0}, {3, 4}, {0, 0}}
    assert.are.same(want, hl.grad(f)(tbl):totable())
    assert.are.same(want, hl.jit(hl.grad(f))(tbl):totable())
    fd_check(f, {tbl}, 1)
  end)
  it("vmap over the ids and over the table", function()
    local tbl = np.rand({6, 3}, -1, 1)
    local ids = hl.array({{1, 2}, {6, 3}, {4, 4}}, "int32")
    local got = hl.vmap(function(i) return hl.nn.embedding(tbl, i) end)(ids)
    for i = 1, 3 do assert.are.equal(0, max_diff(got[i], hl.nn.embedding(tbl, ids[i]))) end
    local tbls = np.rand({2, 6, 3}, -1, 1)
    local g2 = hl.vmap(function(t) return hl.nn.embedding(t, ids) end)(tbls)
    for i = 1, 2 do assert.are.equal(0, max_diff(g2[i], hl.nn.embedding(tbls[i], ids))) end
  end)
  it("rejects out-of-range and non-integer ids", function()
    local tbl = hl.ones({4, 2})
    for _, c in ipairs {{{0, 1}, "id 0 is out of range 1..4"}, {{1, 5}, "id 5 is out of range 1..4"}} do
      local ok, err = pcall(hl.nn.embedding, tbl, hl.array(c[1], "int32"))
      assert.is_false(ok)
      assert(err:find("halua: embedding: " .. c[2], 1, true), err)
      assert(err:find("1-based", 1, true), err)
    end
    local ok, err = pcall(hl.nn.embedding, tbl, hl.array({1.5}))
    assert.is_false(ok)
    assert(err:find("ids must be integers", 1, true), err)
    ok, err = pcall(hl.nn.embedding, hl.ones(4), hl.array({1}, "int32"))
    assert.is_false(ok)
    assert(err:find("table must be [vocab, dim]", 1, true), err)
  end)
end)

---------------------------------------------------------------- attention

suite("nn.dot_product_attention against NumPy (jax.nn.dot_product_attention's definition)", function(case)
  for _, dt in ipairs {"float32", "float64"} do
    local tol = dt == "float32" and {rtol = 1e-5, atol = 1e-5} or {rtol = 1e-12, atol = 1e-12}
    local q, k, v = np.rand({2, 5, 4, 3}, -1, 1, dt), np.rand({2, 6, 4, 3}, -1, 1, dt), np.rand({2, 6, 4, 3}, -1, 1, dt)
    both(case, "plain [B,T,N,H] " .. dt, hl.nn.dot_product_attention, py("attn", "a, b, c"), {q, k, v}, tol)
    both(case, "causal, T < S " .. dt, function(a, b, c) return hl.nn.dot_product_attention(a, b, c, {causal = true}) end,
         py("attn", "a, b, c, causal=True"), {q, k, v}, tol)
    local bias = np.rand({4, 5, 6}, -1, 1, dt)
    both(case, "bias [N,T,S] and scale " .. dt, function(a, b, c, d) return hl.nn.dot_product_attention(a, b, c, {bias = d, scale = 0.3}) end,
         py("attn", "a, b, c, scale=0.3, bias=d"), {q, k, v, bias}, tol)
    local mask = hl.array({{{{true, true, false, true, false, true}}}, {{{false, true, true, true, true, false}}}})  -- [2,1,1,6]
    both(case, "key padding mask [B,1,1,S] with is_causal " .. dt, function(a, b, c, d)
      return hl.nn.dot_product_attention(a, b, c, {mask = d, is_causal = true}) end,
      py("attn", "a, b, c, mask=d, causal=True"), {q, k, v, mask}, tol)
    local kg, vg = np.rand({2, 6, 2, 3}, -1, 1, dt), np.rand({2, 6, 2, 3}, -1, 1, dt)
    both(case, "grouped-query: 4 query heads over 2 kv heads " .. dt, hl.nn.dot_product_attention,
         py("attn", "a, b, c"), {q, kg, vg}, tol)
    local q3, k3 = np.rand({5, 2, 4}, -1, 1, dt), np.rand({5, 2, 4}, -1, 1, dt)
    both(case, "unbatched [T,N,H], causal " .. dt, function(a, b) return hl.nn.dot_product_attention(a, b, b, {causal = true}) end,
         py("attn", "a, b, b, causal=True"), {q3, k3}, tol)
  end
  local q = np.rand({1, 3, 1, 2}, -1, 1)
  local q16 = np.rand({1, 3, 1, 2}, -1, 1, "float16")
  case("a fully masked row gets uniform weights in float16 too", function()
    return hl.nn.dot_product_attention(q16, q16, q16, {mask = hl.zeros({1, 1, 3, 3}, "bool")}) end,
    "np.broadcast_to(a.astype(np.float32).mean(1, keepdims=True), a.shape).astype(np.float16)", {q16}, {rtol = 2e-3, atol = 1e-3})
  case("a fully masked row gets uniform weights, not NaN", function()
    return hl.nn.dot_product_attention(q, q, q, {mask = hl.zeros({1, 1, 3, 3}, "bool")}) end,
    "np.broadcast_to(a.mean(1, keepdims=True), a.shape)", {q}, {rtol = 1e-5, atol = 1e-6})
end)

describe("nn.dot_product_attention: gradients, vmap and errors", function()
  it("gradients in q, k, v and bias against central differences, and under jit", function()
    local q, k, v = np.rand({1, 3, 2, 2}, -1, 1, "float64"), np.rand({1, 4, 2, 2}, -1, 1, "float64"), np.rand({1, 4, 2, 2}, -1, 1, "float64")
    local bias = np.rand({2, 3, 4}, -1, 1, "float64")
    local p = np.rand({1, 3, 2, 2}, -1, 1, "float64")
    local loss = function(a, b, c, d) return hl.sum(hl.nn.dot_product_attention(a, b, c, {bias = d, causal = true}) * p) end
    for i = 1, 4 do fd_check(loss, {q, k, v, bias}, i) end
    local g, jg = hl.grad(loss, {1, 2, 3, 4})(q, k, v, bias), hl.jit(hl.grad(loss, {1, 2, 3, 4}))(q, k, v, bias)
    for i = 1, 4 do assert(max_diff(g[i], jg[i]) < 1e-12, "jit gradient " .. i) end
  end)
  it("vmap over a leading axis equals the loop", function()
    local q, k = np.rand({3, 4, 2, 5}, -1, 1), np.rand({3, 6, 2, 5}, -1, 1)
    local f = function(a, b) return hl.nn.dot_product_attention(a, b, b, {causal = true}) end
    local got = hl.vmap(f)(q, k)
    for i = 1, 3 do assert(max_diff(got[i], f(q[i], k[i])) < 1e-5) end
  end)
  it("errors name the shapes and the options", function()
    local function fails(words, f)
      local ok, err = pcall(f)
      assert.is_false(ok)
      assert(err:find("^halua: dot_product_attention: "), err)
      for _, word in ipairs(words) do assert(err:find(word, 1, true), "error '" .. err .. "' lacks '" .. word .. "'") end
    end
    local q, k = hl.ones({2, 5, 4, 3}), hl.ones({2, 6, 4, 3})
    local attn = hl.nn.dot_product_attention
    fails({"[batch..., seq, heads, dim]", "[5,4]"}, function() attn(hl.ones({5, 4}), k, k) end)
    fails({"head dim 3 differs from k's 2"}, function() attn(q, hl.ones({2, 6, 4, 2}), hl.ones({2, 6, 4, 2})) end)
    fails({"4 heads are not a multiple", "3 heads"}, function() attn(q, hl.ones({2, 6, 3, 3}), hl.ones({2, 6, 3, 3})) end)
    fails({"batch axes differ"}, function() attn(q, hl.ones({3, 6, 4, 3}), hl.ones({3, 6, 4, 3})) end)
    fails({"k [2,6,4,3] and v [2,7,4,3]"}, function() attn(q, k, hl.ones({2, 7, 4, 3})) end)
    fails({"mask must be a bool array"}, function() attn(q, k, k, {mask = hl.ones({6})}) end)
    fails({"mask [5]", "does not broadcast", "[2,4,5,6]"}, function() attn(q, k, k, {mask = hl.ones({5}, "bool")}) end)
    fails({"bias [4,6,5]", "does not broadcast"}, function() attn(q, k, k, {bias = hl.ones({4, 6, 5})}) end)
    fails({"unknown option 'dropout'", "causal"}, function() attn(q, k, k, {dropout = 0.1}) end)
  end)
end)

---------------------------------------------------------------- recurrent cells

describe("nn.lstm_cell and gru_cell: PyTorch's LSTMCell and GRUCell", function()
  local key = hl.random.key(5)
  local function np_check(got, expr, inputs, tol)
    local batch = np.batch()
    local want = batch:add(expr, inputs)
    batch:run()
    np.assert_close(got, want(), {rtol = tol, atol = tol})
  end
  for _, dt in ipairs {"float32", "float64"} do
    local tol = dt == "float32" and 1e-5 or 1e-12
    it("lstm_cell matches the equations, batched and single, eager and under jit " .. dt, function()
      local p = hl.nn.init.lstm(key, 3, 4, dt)
      assert.are.same({16, 3}, p.w_ih.shape)
      assert.are.equal(dt, p.w_hh.dtype)
      local x, h, c = np.rand({2, 3}, -1, 1, dt), np.rand({2, 4}, -1, 1, dt), np.rand({2, 4}, -1, 1, dt)
      local args = {x, h, c, p.w_ih, p.w_hh, p.b_ih, p.b_hh}
      local carry, out = hl.nn.lstm_cell(p, {h = h, c = c}, x)
      np_check(out, py("lstm", "a, b, c, d, e, f, g") .. "[0]", args, tol)
      np_check(carry.c, py("lstm", "a, b, c, d, e, f, g") .. "[1]", args, tol)
      local jc = hl.jit(hl.nn.lstm_cell)(p, {h = h, c = c}, x)
      assert(max_diff(jc.c, carry.c) < tol and max_diff(jc.h, carry.h) < tol)
      local c1 = hl.nn.lstm_cell(p, {h = h[1], c = c[1]}, x[1])
      assert(max_diff(c1.h, carry.h[1]) < tol)
    end)
    it("gru_cell matches the equations " .. dt, function()
      local p = hl.nn.init.gru(key, 3, 5, dt)
      assert.are.same({15, 5}, p.w_hh.shape)
      local x, h = np.rand({4, 3}, -1, 1, dt), np.rand({4, 5}, -1, 1, dt)
      local h2, out = hl.nn.gru_cell(p, h, x)
      assert.are.equal(h2, out)
      np_check(h2, py("gru", "a, b, c, d, e, f"), {x, h, p.w_ih, p.w_hh, p.b_ih, p.b_hh}, tol)
      assert(max_diff(hl.jit(hl.nn.gru_cell)(p, h, x), h2) < tol)
    end)
  end
  it("run by hl.scan over a sequence: equal to the Lua loop, and differentiable", function()
    local p = hl.nn.init.lstm(key, 2, 3, "float64")
    local xs = np.rand({5, 4, 2}, -1, 1, "float64")          -- [time, batch, input]
    local c0 = {h = hl.zeros({4, 3}, "float64"), c = hl.zeros({4, 3}, "float64")}
    local run = function(pp, seq) return hl.scan(function(cr, x) return hl.nn.lstm_cell(pp, cr, x) end, c0, seq) end
    local last, hs = run(p, xs)
    assert.are.same({5, 4, 3}, hs.shape)
    local cr = c0
    for t = 1, 5 do
      local y
      cr, y = hl.nn.lstm_cell(p, cr, xs[t])
      assert(max_diff(hs[t], y) < 1e-12, "step " .. t)
    end
    assert(max_diff(last.c, cr.c) < 1e-12)
    local loss = function(seq) local _, ys = run(p, seq); return hl.sum(ys * ys) end
    fd_check(loss, {xs}, 1)
    local pg = hl.nn.init.gru(key, 2, 3, "float64")
    local gl = function(wi)
      local q = {w_ih = wi, w_hh = pg.w_hh, b_ih = pg.b_ih, b_hh = pg.b_hh}
      local hT = hl.scan(function(h, x) return hl.nn.gru_cell(q, h, x) end, hl.zeros({4, 3}, "float64"), xs)
      return hl.sum(hT * hT)
    end
    fd_check(gl, {pg.w_ih}, 1)
    assert(max_diff(hl.jit(hl.grad(gl))(pg.w_ih), hl.grad(gl)(pg.w_ih)) < 1e-12)
  end)
  it("vmap over a batch of single sequences equals the batched cell", function()
    local p = hl.nn.init.gru(key, 3, 2)
    local x, h = np.rand({6, 3}, -1, 1), np.rand({6, 2}, -1, 1)
    local got = hl.vmap(function(hh, xx) return (hl.nn.gru_cell(p, hh, xx)) end)(h, x)
    assert(max_diff(got, (hl.nn.gru_cell(p, h, x))) < 1e-6)
    local pl = hl.nn.init.lstm(key, 3, 2)
    local gl = hl.vmap(function(hh, xx) return (hl.nn.lstm_cell(pl, {h = hh, c = hh}, xx)) end)(h, x)
    assert(max_diff(gl.c, (hl.nn.lstm_cell(pl, {h = h, c = h}, x)).c) < 1e-6)
  end)
  it("errors name the parameter and the shapes", function()
    local p = hl.nn.init.lstm(key, 3, 4)
    local function fails(words, f)
      local ok, err = pcall(f)
      assert.is_false(ok)
      assert(err:find("^halua: "), err)
      for _, word in ipairs(words) do assert(err:find(word, 1, true), "error '" .. err .. "' lacks '" .. word .. "'") end
    end
    local h = {h = hl.zeros({2, 4}), c = hl.zeros({2, 4})}
    fails({"lstm_cell:", "x must be", "input = 3", "[2,5]"}, function() hl.nn.lstm_cell(p, h, hl.ones({2, 5})) end)
    fails({"lstm_cell:", "carry.c must be [2,4]"}, function() hl.nn.lstm_cell(p, {h = h.h, c = hl.zeros({2, 3})}, hl.ones({2, 3})) end)
    fails({"lstm_cell:", "params.b_hh is missing"}, function() hl.nn.lstm_cell({w_ih = p.w_ih, w_hh = p.w_hh, b_ih = p.b_ih}, h, hl.ones({2, 3})) end)
    fails({"gru_cell:", "params.w_hh must be [3*hidden, hidden]", "[16,4]"}, function() hl.nn.gru_cell(p, h.h, hl.ones({2, 3})) end)
    fails({"lstm_cell:", "carry must be a table"}, function() hl.nn.lstm_cell(p, hl.zeros({2, 4}), hl.ones({2, 3})) end)
    fails({"nn.init.gru:", "positive integers"}, function() hl.nn.init.gru(key, 0, 3) end)
  end)
end)

describe("nn layers under forward mode", function()
  it("jvp agrees with the gradient: <grad f(x), t> = jvp(f, x, t) for conv, conv_transpose, norms and attention", function()
    local cases = {
      {"conv2d", function(x) return hl.nn.conv2d(x, hl.ones({4, 1, 2, 2}, "float64"), {groups = 2, dilation = 2, padding = "same"}) end, {1, 2, 5, 5}},
      {"conv_transpose1d", function(x) return hl.nn.conv_transpose1d(x, hl.ones({2, 3, 3}, "float64"), {stride = 2, output_padding = 1}) end, {2, 2, 4}},
      {"layer_norm", function(x) return hl.nn.layer_norm(x) end, {3, 5}},
      {"batch_norm", function(x) return (hl.nn.batch_norm(x, nil, nil, nil)) end, {4, 3}},
      {"dot_product_attention", function(x) return hl.nn.dot_product_attention(x, x, x, {causal = true}) end, {1, 4, 2, 3}},
    }
    for _, c in ipairs(cases) do
      local x, t = np.rand(c[3], -1, 1, "float64"), np.rand(c[3], -1, 1, "float64")
      local y = c[2](x)
      local w = hl.array(np.rand(y.shape, -1, 1, "float64"))
      local scalar = function(z) return hl.sum(c[2](z) * w) end
      local _, tangent = hl.jvp(c[2], {x}, {t})
      local lhs = hl.sum(hl.grad(scalar)(x) * t):item()
      local rhs = hl.sum(tangent * w):item()
      assert(math.abs(lhs - rhs) < 1e-10 * math.max(1, math.abs(lhs)), c[1] .. ": " .. lhs .. " vs " .. rhs)
    end
  end)
end)

describe("nn.embedding's arguments", function()
  it("a third argument (such as an options table) is an error, not ignored", function()
    local ok, err = pcall(hl.nn.embedding, hl.ones({4, 2}), hl.array({1, 2}, "int32"), {scale = 2})
    assert.is_false(ok)
    assert.are.equal("halua: embedding: takes (table, ids) and no options, got a third argument (a table)", err)
  end)
end)
