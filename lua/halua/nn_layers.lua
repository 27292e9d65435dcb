-- hl.nn layers: normalisation (layer_norm, rms_norm, batch_norm), embedding lookup, scaled
-- dot-product attention, and LSTM and GRU cells with their initialisers. All compose primitives,
-- so they trace, differentiate and batch through the primitives' rules.
-- shared: init.lua's helpers {as_array, named}.
return function(hl, core, shared)
  local util = require "halua.util"
  local fail, as_array = util.fail, shared.as_array
  local is_array = core.is_array
  local nn = hl.nn
  local shape_str = util.shape_str

  local is_float = util.is_float
  local function floating(x) return is_float(x.dtype) and x or x:astype("float32") end

  local function opts_of(op, opts, names)
    if opts ~= nil and (type(opts) ~= "table" or is_array(opts)) then fail("%s: options must be a table, got %s", op, type(opts)) end
    return util.options(op, opts, names)
  end

  -- the trailing arguments of the norms: up to `count` arrays (or nil) and then an options table
  local function split_args(count, ...)
    local args, n = {...}, select("#", ...)
    local opts
    if n > 0 and type(args[n]) == "table" and not is_array(args[n]) then
      opts, args[n], n = args[n], nil, n - 1
    end
    if n > count then return nil end
    return opts, args
  end

  -- the axes to normalise over (0-based, sorted), from opts.axis: a number or a list, default -1;
  -- also the set of them
  local function norm_axes(op, axis, ndim)
    if type(axis) == "table" and #axis == 0 then fail("%s: axis must name at least one axis", op) end
    local out, seen = util.norm_axes(op, axis == nil and -1 or axis, ndim), {}
    for _, a in ipairs(out) do seen[a] = true end
    return out, seen
  end

  -- a scale or shift for the normalised axes: the extents of those axes (as PyTorch's
  -- normalized_shape) placed among x's axes, or anything that broadcasts to x
  local function affine(op, what, p, x, axes, seen)
    if p == nil then return nil end
    p = as_array(p, op)
    local xs = x.shape
    local ext, full = {}, {}
    for _, a in ipairs(axes) do ext[#ext + 1] = xs[a + 1] end
    for d = 0, x.ndim - 1 do full[d + 1] = seen[d] and xs[d + 1] or 1 end
    local ps = p.shape
    if #ps == #ext then
      local same = true
      for i = 1, #ext do same = same and ps[i] == ext[i] end
      if same then return hl.reshape(p, full) end
    end
    local ok = #ps <= #xs
    for i = 1, #ps do
      local a, b = ps[#ps - i + 1], xs[#xs - i + 1]
      ok = ok and (a == b or a == 1)
    end
    if not ok then
      fail("%s: %s must have the normalised axes' shape %s (or broadcast to the input %s), got %s", op, what,
           shape_str(ext), shape_str(xs), shape_str(ps))
    end
    return p
  end

  local function eps_of(op, eps, default)
    if eps == nil then return default end
    if type(eps) ~= "number" or eps < 0 then fail("%s: eps must be a non-negative number, got %s", op, tostring(eps)) end
    return eps
  end

  local function axes_list(axes)
    local t = {}
    for i, a in ipairs(axes) do t[i] = a + 1 end
    return t
  end

  ---------------------------------------------------------------- normalisation

  -- what layer_norm and rms_norm share: x as floats, their parameters (`names`, each optional,
  -- shaped as the normalised axes) and options {axis, eps}; returns x, the axes (1-based, for the
  -- means), eps and the parameters
  local function norm_setup(op, x, names, default_eps, usage, ...)
    x = floating(as_array(x, op, 1))
    local opts, args = split_args(#names, ...)
    if not args then fail("%s: expected %s", op, usage) end
    opts = opts_of(op, opts, {"axis", "eps"})
    local axes, seen = norm_axes(op, opts.axis, x.ndim)
    local eps = eps_of(op, opts.eps, default_eps)
    local params = {}
    for i, name in ipairs(names) do params[i] = affine(op, name, args[i], x, axes, seen) end
    return x, axes_list(axes), eps, params[1], params[2]
  end

  -- layer_norm(x [, gamma [, beta]] [, opts]): (x - mean) / sqrt(var + eps) * gamma + beta over
  -- opts.axis (default -1, the features); the biased variance, as PyTorch and Flax
  function nn.layer_norm(x, ...)
    local ax, eps, gamma, beta
    x, ax, eps, gamma, beta = norm_setup("layer_norm", x, {"gamma", "beta"}, 1e-5, "(x [, gamma [, beta]] [, opts])", ...)
    local c = x - hl.mean(x, ax, true)
    local y = c * hl.rsqrt(hl.mean(c * c, ax, true) + eps)
    if gamma then y = y * gamma end
    if beta then y = y + beta end
    return y
  end

  -- rms_norm(x [, gamma] [, opts]): x / sqrt(mean(x^2) + eps) * gamma over opts.axis (default -1)
  function nn.rms_norm(x, ...)
    local ax, eps, gamma
    x, ax, eps, gamma = norm_setup("rms_norm", x, {"gamma"}, 1e-6, "(x [, gamma] [, opts])", ...)
    local y = x * hl.rsqrt(hl.mean(x * x, ax, true) + eps)
    if gamma then y = y * gamma end
    return y
  end

  -- batch_norm(x, gamma, beta, state [, opts]) -> y, new_state. Features along opts.axis (default
  -- 2: channels of (N, C, ...), as PyTorch's BatchNorm1d/2d/3d); statistics over every other
  -- axis. state = {mean =, var =} running statistics of the feature shape (nil: zeros and ones).
  -- opts.train (default true): normalise by the batch's statistics (biased variance) and return
  -- running = (1 - momentum) * running + momentum * batch (unbiased variance; momentum 0.1, both
  -- PyTorch's convention); train = false normalises by state and returns it unchanged.
  function nn.batch_norm(x, gamma, beta, state, opts)
    x = floating(as_array(x, "batch_norm", 1))
    opts = opts_of("batch_norm", opts, {"train", "momentum", "eps", "axis"})
    if x.ndim < 2 then fail("batch_norm: input must have a batch axis and a feature axis ([N, C, ...]), got shape %s", shape_str(x.shape)) end
    local axis = opts.axis or 2
    local fa = norm_axes("batch_norm", axis, x.ndim)
    if type(axis) == "table" and #fa ~= 1 then fail("batch_norm: axis must be one feature axis") end
    fa = fa[1]
    local eps = eps_of("batch_norm", opts.eps, 1e-5)
    local momentum = opts.momentum == nil and 0.1 or opts.momentum
    if type(momentum) ~= "number" or momentum < 0 or momentum > 1 then
      fail("batch_norm: momentum must be a number in [0, 1], got %s", tostring(momentum))
    end
    local train = opts.train
    if train == nil then train = true end
    if type(train) ~= "boolean" then fail("batch_norm: train must be true or false, got %s", tostring(train)) end
    local xs = x.shape
    local c = xs[fa + 1]
    local bshape, red, count = {}, {}, 1
    for d = 0, x.ndim - 1 do
      bshape[d + 1] = d == fa and c or 1
      if d ~= fa then red[#red + 1] = d + 1; count = count * xs[d + 1] end
    end
    local function feature(p, what, default)
      if p == nil then return default and hl.full({c}, default, x.dtype) or nil end
      p = as_array(p, "batch_norm")
      if p.ndim ~= 1 or p.shape[1] ~= c then
        fail("batch_norm: %s must have shape [%d] (one per feature along axis %d of %s), got %s", what, c, fa + 1,
             shape_str(xs), shape_str(p.shape))
      end
      return p
    end
    gamma, beta = feature(gamma, "gamma"), feature(beta, "beta")
    if state ~= nil and (type(state) ~= "table" or is_array(state)) then
      fail("batch_norm: state must be a table {mean =, var =} or nil, got %s", is_array(state) and "an array" or type(state))
    end
    if state ~= nil then util.options("batch_norm", state, {"mean", "var"}) end
    local rmean = feature(state and state.mean, "state.mean", 0)
    local rvar = feature(state and state.var, "state.var", 1)
    local mean, var, new_state
    if train then
      if #red > 0 and count < 2 then
        fail("batch_norm: training needs more than one value per feature, got input %s", shape_str(xs))
      end
      mean = hl.mean(x, red, true)
      local d = x - mean
      var = hl.mean(d * d, red, true)
      local bm, bv = hl.reshape(mean, {c}), hl.reshape(var, {c}) * (count / math.max(count - 1, 1))
      new_state = {mean = (1 - momentum) * rmean + momentum * hl.stop_gradient(bm),
                   var = (1 - momentum) * rvar + momentum * hl.stop_gradient(bv)}
    else
      mean, var = hl.reshape(rmean, bshape), hl.reshape(rvar, bshape)
      new_state = {mean = rmean, var = rvar}
    end
    local y = (x - mean) * hl.rsqrt(var + eps)
    if gamma then y = y * hl.reshape(gamma, bshape) end
    if beta then y = y + hl.reshape(beta, bshape) end
    return y, new_state
  end

  ---------------------------------------------------------------- embedding

  -- embedding(table, ids): rows of table [vocab, dim] at the 1-based integer ids, shaped
  -- ids' shape + [dim]; one gather, so the gradient is a scatter-add into the table
  function nn.embedding(tbl, ids, extra)
    if extra ~= nil then fail("embedding: takes (table, ids) and no options, got a third argument (a %s)", type(extra)) end
    tbl = as_array(tbl, "embedding", 1)
    if tbl.ndim ~= 2 then fail("embedding: table must be [vocab, dim], got shape %s", shape_str(tbl.shape)) end
    if not is_array(ids) then
      -- a Lua number or list: whole numbers become int32 ids
      ids = hl.asarray(ids)
      if is_float(ids.dtype) and ids.size > 0 and hl.all(hl.eq(ids, hl.floor(ids))):item() then ids = ids:astype("int32") end
    end
    if is_float(ids.dtype) or ids.dtype == "bool" then
      fail("embedding: ids must be integers (1-based), got %s %s", ids.dtype, shape_str(ids.shape))
    end
    if not core.is_tracer(ids) and ids.size > 0 then
      local lo, hi = hl.min(ids):item(), hl.max(ids):item()
      if lo < 1 or hi > tbl.shape[1] then
        fail("embedding: id %d is out of range 1..%d (ids are 1-based)", lo < 1 and lo or hi, tbl.shape[1])
      end
    end
    return hl.take(tbl, ids, 1)
  end

  ---------------------------------------------------------------- attention

  -- dot_product_attention(q, k, v [, opts]) as jax.nn.dot_product_attention: q [batch..., T, N,
  -- H], k and v [batch..., S, K, H] with N a multiple of K (grouped-query attention repeats each
  -- key/value head N / K times) -> [batch..., T, N, H]. opts.bias (added to the logits) and
  -- opts.mask (bool, true = attend) broadcast to [batch..., N, T, S]; opts.causal (or is_causal)
  -- lets query t see keys 1..t; opts.scale defaults to 1 / sqrt(H).
  function nn.dot_product_attention(q, k, v, opts)
    local op = "dot_product_attention"
    q, k, v = as_array(q, op, 1), as_array(k, op, 2), as_array(v, op, 3)
    opts = opts_of(op, opts, {"bias", "mask", "causal", "is_causal", "scale"})
    if q.ndim < 3 or k.ndim ~= q.ndim or v.ndim ~= q.ndim then
      fail("%s: q, k and v must be [batch..., seq, heads, dim] of one rank (at least 3), got %s, %s and %s", op,
           shape_str(q.shape), shape_str(k.shape), shape_str(v.shape))
    end
    local r = q.ndim
    local qs, ks, vs = q.shape, k.shape, v.shape
    for d = 1, r - 3 do
      if qs[d] ~= ks[d] or qs[d] ~= vs[d] then
        fail("%s: batch axes differ: q %s, k %s, v %s", op, shape_str(qs), shape_str(ks), shape_str(vs))
      end
    end
    local t, n, h = qs[r - 2], qs[r - 1], qs[r]
    local s, kh = ks[r - 2], ks[r - 1]
    if ks[r] ~= h then fail("%s: q's head dim %d differs from k's %d (q %s, k %s)", op, h, ks[r], shape_str(qs), shape_str(ks)) end
    if vs[r - 2] ~= s or vs[r - 1] ~= kh then
      fail("%s: k %s and v %s must agree on seq and heads", op, shape_str(ks), shape_str(vs))
    end
    if kh == 0 or n % kh ~= 0 then
      fail("%s: q's %d heads are not a multiple of k's and v's %d heads", op, n, kh)
    end
    local scale = opts.scale
    if scale == nil then scale = 1 / math.sqrt(h) end
    if type(scale) ~= "number" then fail("%s: scale must be a number, got %s", op, type(scale)) end
    local causal = opts.causal
    if causal == nil then causal = opts.is_causal end
    if causal ~= nil and type(causal) ~= "boolean" then fail("%s: causal must be true or false, got %s", op, tostring(causal)) end
    q, k, v = floating(q), floating(k), floating(v)
    if kh ~= n then k, v = hl["repeat"](k, n / kh, r - 1), hl["repeat"](v, n / kh, r - 1) end
    -- heads before the sequence: [batch..., N, T, H]
    local perm = {}
    for d = 1, r - 3 do perm[d] = d end
    perm[r - 2], perm[r - 1], perm[r] = r - 1, r - 2, r
    local qh, khd, vh = hl.transpose(q, perm), hl.transpose(k, perm), hl.transpose(v, perm)
    local tperm = {}
    for d = 1, r - 2 do tperm[d] = d end
    tperm[r - 1], tperm[r] = r, r - 1
    local logits = hl.matmul(qh * scale, hl.transpose(khd, tperm))         -- [batch..., N, T, S]
    local ls = logits.shape
    local function broadcastable(what, m)
      local ms = m.shape
      local ok = #ms <= #ls
      for i = 1, #ms do
        local a, b = ms[#ms - i + 1], ls[#ls - i + 1]
        ok = ok and (a == b or a == 1)
      end
      if not ok then fail("%s: %s %s does not broadcast to the logits' [batch..., heads, T, S] = %s", op, what, shape_str(ms), shape_str(ls)) end
    end
    if opts.bias ~= nil then
      local b = as_array(opts.bias, op)
      broadcastable("bias", b)
      logits = logits + b
    end
    local keep
    if opts.mask ~= nil then
      local m = as_array(opts.mask, op)
      if m.dtype ~= "bool" then fail("%s: mask must be a bool array (true = attend), got %s", op, m.dtype) end
      broadcastable("mask", m)
      keep = m
    end
    if causal then
      local c = hl.ge(hl.reshape(hl.arange(t, "int32"), {t, 1}), hl.reshape(hl.arange(s, "int32"), {1, s}))
      keep = keep and hl.logical_and(keep, c) or c
    end
    if keep then
      -- a large finite value, not -inf: a row with every key masked gets uniform weights, not NaN
      -- (as JAX)
      local big = ({float64 = 1.7976931348623157e308, float16 = 65504})[logits.dtype] or 3.4028234663852886e38
      logits = hl.where(keep, logits, -0.7 * big)
    end
    -- the softmax over rows of a 2-D view: the engine schedules a last-axis reduction of a 2-D
    -- array several times faster than the same reduction of the 4-D logits
    local w = s > 0 and hl.reshape(hl.nn.softmax(hl.reshape(logits, {-1, s}), -1), ls) or logits
    return hl.transpose(hl.matmul(w, vh), perm)
  end

  ---------------------------------------------------------------- recurrent cells

  -- PyTorch's parameters: w_ih [G*H, I], w_hh [G*H, H], b_ih and b_hh [G*H], gates stacked in
  -- PyTorch's order (LSTM i, f, g, o; GRU r, z, n)
  local function check_cell(op, params, gates)
    if type(params) ~= "table" or is_array(params) then fail("%s: params must be a table {w_ih, w_hh, b_ih, b_hh}", op) end
    util.options(op, params, {"w_ih", "w_hh", "b_ih", "b_hh"})
    for _, name in ipairs {"w_ih", "w_hh", "b_ih", "b_hh"} do
      if params[name] == nil then fail("%s: params.%s is missing (params are {w_ih, w_hh, b_ih, b_hh})", op, name) end
    end
    local wi, wh = as_array(params.w_ih, op), as_array(params.w_hh, op)
    local bi, bh = as_array(params.b_ih, op), as_array(params.b_hh, op)
    if wh.ndim ~= 2 or wh.shape[1] ~= gates * wh.shape[2] then
      fail("%s: params.w_hh must be [%d*hidden, hidden], got %s", op, gates, shape_str(wh.shape))
    end
    local hid = wh.shape[2]
    if wi.ndim ~= 2 or wi.shape[1] ~= gates * hid then
      fail("%s: params.w_ih must be [%d, input] (%d*hidden), got %s", op, gates * hid, gates, shape_str(wi.shape))
    end
    for name, b in pairs {b_ih = bi, b_hh = bh} do
      if b.ndim ~= 1 or b.shape[1] ~= gates * hid then
        fail("%s: params.%s must be [%d], got %s", op, name, gates * hid, shape_str(b.shape))
      end
    end
    return wi, wh, bi, bh, hid
  end

  local function check_state(op, what, s, x, hid)
    s = as_array(s, op)
    local want = x.ndim == 2 and {x.shape[1], hid} or {hid}
    if s.ndim ~= #want or s.shape[#want] ~= hid or (x.ndim == 2 and s.shape[1] ~= want[1]) then
      fail("%s: %s must be %s for input %s, got %s", op, what, shape_str(want), shape_str(x.shape), shape_str(s.shape))
    end
    return s
  end

  local function check_x(op, x, wi)
    x = floating(as_array(x, op))
    if (x.ndim ~= 1 and x.ndim ~= 2) or x.shape[x.ndim] ~= wi.shape[2] then
      fail("%s: x must be [input] or [batch, input] with input = %d, got %s", op, wi.shape[2], shape_str(x.shape))
    end
    return x
  end

  -- the gate slices of a [..., G*H] array
  local function gate(a, i, hid)
    local idx = {}
    for d = 1, a.ndim - 1 do idx[d] = {} end
    idx[a.ndim] = {(i - 1) * hid + 1, i * hid}
    return a[idx]
  end

  -- lstm_cell(params, carry, x) -> new_carry, h: PyTorch's LSTMCell. carry = {h =, c =};
  -- a function of (carry, x) as hl.scan runs it
  function nn.lstm_cell(params, carry, x)
    local op = "lstm_cell"
    local wi, wh, bi, bh, hid = check_cell(op, params, 4)
    if type(carry) ~= "table" or is_array(carry) then fail("%s: carry must be a table {h =, c =}", op) end
    x = check_x(op, x, wi)
    local h, c = check_state(op, "carry.h", carry.h, x, hid), check_state(op, "carry.c", carry.c, x, hid)
    local z = hl.matmul(x, wi.T) + bi + hl.matmul(h, wh.T) + bh
    local i, f = nn.sigmoid(gate(z, 1, hid)), nn.sigmoid(gate(z, 2, hid))
    local g, o = hl.tanh(gate(z, 3, hid)), nn.sigmoid(gate(z, 4, hid))
    local c2 = f * c + i * g
    local h2 = o * hl.tanh(c2)
    return {h = h2, c = c2}, h2
  end

  -- gru_cell(params, h, x) -> new_h, new_h: PyTorch's GRUCell (the reset gate applied to
  -- w_hn h + b_hn)
  function nn.gru_cell(params, h, x)
    local op = "gru_cell"
    local wi, wh, bi, bh, hid = check_cell(op, params, 3)
    x = check_x(op, x, wi)
    h = check_state(op, "h", h, x, hid)
    local a = hl.matmul(x, wi.T) + bi
    local b = hl.matmul(h, wh.T) + bh
    local r = nn.sigmoid(gate(a, 1, hid) + gate(b, 1, hid))
    local z = nn.sigmoid(gate(a, 2, hid) + gate(b, 2, hid))
    local n = hl.tanh(gate(a, 3, hid) + r * gate(b, 3, hid))
    local h2 = (1 - z) * n + z * h
    return h2, h2
  end

  -- PyTorch's initialisation: every weight and bias uniform on +-1/sqrt(hidden)
  local function cell_init(op, gates)
    return function(key, input, hidden, dtype)
      for _, v in ipairs {input, hidden} do
        if type(v) ~= "number" or v ~= math.floor(v) or v < 1 then
          fail("%s: input and hidden sizes must be positive integers, got %s", op, tostring(v))
        end
      end
      dtype = dtype or "float32"
      local ks = hl.random.split(key, 4)
      local lim = 1 / math.sqrt(hidden)
      local u = function(i, shape) return hl.random.uniform(ks[i], shape, dtype, -lim, lim) end
      return {w_ih = u(1, {gates * hidden, input}), w_hh = u(2, {gates * hidden, hidden}),
              b_ih = u(3, {gates * hidden}), b_hh = u(4, {gates * hidden})}
    end
  end
  nn.init.lstm = shared.named("nn.init.lstm", cell_init("nn.init.lstm", 4))
  nn.init.gru = shared.named("nn.init.gru", cell_init("nn.init.gru", 3))

  for _, name in ipairs {"layer_norm", "rms_norm", "batch_norm", "embedding", "dot_product_attention", "lstm_cell", "gru_cell"} do
    nn[name] = shared.named(name, nn[name])
  end
end
