-- hl.nn convolutions (1, 2 and 3 spatial dimensions, transposed too) and 2-D pooling, channels
-- first (N, C, spatial...) as PyTorch. One mechanism serves them all: a host-built table of where
-- each window element reads in the flattened input (-1 where it reads padding or, for a
-- transposed convolution, a hole between strided inputs); one gather of that table is the whole
-- im2col, its gradient one scatter_add, and the convolution one matmul over the windows.
-- shared: init.lua's helpers {as_array, named}.
return function(hl, core, shared)
  local util = require "halua.util"
  local fail, as_array = util.fail, shared.as_array
  local is_array = core.is_array
  local nn = hl.nn
  local shape_str = util.shape_str

  local is_float = util.is_float
  local is_int = util.is_integer

  local LAYOUT = {"NCW (3-D)", "NCHW (4-D)", "NCDHW (5-D)"}
  local KERNEL = {"(out, in, kw)", "(out, in, kh, kw)", "(out, in, kd, kh, kw)"}
  local TKERNEL = {"(in, out, kw)", "(in, out, kh, kw)", "(in, out, kd, kh, kw)"}
  local DIMS = {"{w}", "{h, w}", "{d, h, w}"}

  -- a number or a list of n numbers -> a list of n integers (positive, or non-negative where
  -- zero_ok)
  local function per_dim(op, what, v, n, zero_ok)
    if type(v) == "number" then
      local t = {}
      for i = 1, n do t[i] = v end
      v = t
    end
    if type(v) ~= "table" or is_array(v) or #v ~= n then
      fail("%s: %s must be a number or %s, got %s", op, what, DIMS[n] or "a list", tostring(v))
    end
    local lo = zero_ok and 0 or 1
    for i = 1, n do
      if not is_int(v[i]) or v[i] < lo then
        local s = {}
        for j = 1, #v do s[j] = tostring(v[j]) end
        fail("%s: %s must be %s integers, got {%s}", op, what, zero_ok and "non-negative" or "positive", table.concat(s, ", "))
      end
    end
    return v
  end

  -- padding -> lo, hi lists: a number, n numbers (each both sides), n {lo, hi} pairs ({lo, hi}
  -- alone in 1-D), "valid" (none) or "same" (the output has ceil(input / stride) positions, the
  -- odd one of a padding on the high side, as JAX and PyTorch)
  local function paddings(op, v, n, sizes, ks, strides, dils)
    local lo, hi = {}, {}
    if v == "valid" or v == "VALID" then
      for i = 1, n do lo[i], hi[i] = 0, 0 end
      return lo, hi
    elseif v == "same" or v == "SAME" then
      for i = 1, n do
        local ke = dils[i] * (ks[i] - 1) + 1
        local total = math.max((math.ceil(sizes[i] / strides[i]) - 1) * strides[i] + ke - sizes[i], 0)
        lo[i] = math.floor(total / 2)
        hi[i] = total - lo[i]
      end
      return lo, hi
    elseif type(v) == "string" then
      fail("%s: padding must be a number, a list, {lo, hi} pairs, \"same\" or \"valid\", got \"%s\"", op, v)
    end
    if n == 1 and type(v) == "table" and #v == 2 and type(v[1]) == "number" then v = {v} end
    if type(v) == "table" and type(v[1]) == "table" then
      if #v ~= n then fail("%s: padding needs %d {lo, hi} pairs, got %d", op, n, #v) end
      for i = 1, n do
        local p = v[i]
        if type(p) ~= "table" or #p ~= 2 or not is_int(p[1]) or not is_int(p[2]) or p[1] < 0 or p[2] < 0 then
          fail("%s: padding pair %d must be two non-negative integers {lo, hi}", op, i)
        end
        lo[i], hi[i] = p[1], p[2]
      end
      return lo, hi
    end
    v = per_dim(op, "padding", v, n, true)
    for i = 1, n do lo[i], hi[i] = v[i], v[i] end
    return lo, hi
  end

  -- The window table for one geometry: a (K, P) int32 array, K = prod(ks) window elements in
  -- row-major order, P = prod(out) output positions, holding the flat 0-based position each reads
  -- in the input of extents `sizes`, or -1. Per dimension, the input is first spread by `gap`
  -- (gap - 1 holes between elements: a transposed convolution's stride), then padded by lo/hi
  -- (negative trims), and read at o * stride + i * dilation. Cached per geometry on the host.
  local window_cache = {}
  local function window_index(op, sizes, ks, strides, dils, lo, hi, gaps)
    local n = #sizes
    local outs = {}
    for d = 1, n do
      local span = (sizes[d] - 1) * gaps[d] + 1 + lo[d] + hi[d]
      local ke = dils[d] * (ks[d] - 1) + 1
      if sizes[d] == 0 or span < ke then
        local function cat(t) return table.concat(t, "x") end
        local pads = {}
        for i = 1, n do pads[i] = lo[i] == hi[i] and tostring(lo[i]) or ("{" .. lo[i] .. ", " .. hi[i] .. "}") end
        fail("%s: the %s window%s does not fit the %s input padded by {%s}", op, cat(ks),
             dils[d] > 1 and " (dilated to " .. ke .. ")" or "", cat(sizes), table.concat(pads, ", "))
      end
      outs[d] = math.floor((span - ke) / strides[d]) + 1
    end
    local key = table.concat({table.concat(sizes, ","), table.concat(ks, ","), table.concat(strides, ","),
                              table.concat(dils, ","), table.concat(lo, ","), table.concat(hi, ","), table.concat(gaps, ",")}, ";")
    local hit = window_cache[key]
    if hit then return hit, outs end
    -- rows[r][c]: built one dimension at a time, each step splitting every row into ks[d] rows
    -- and every column into outs[d] columns
    local rows = {{0}}
    for d = 1, n do
      local where = {}                                   -- where[i][o]: input coordinate or -1
      for i = 0, ks[d] - 1 do
        local w = {}
        for o = 0, outs[d] - 1 do
          local z = o * strides[d] + i * dils[d] - lo[d]
          local y = z / gaps[d]
          w[o] = (z >= 0 and z % gaps[d] == 0 and y < sizes[d]) and y or -1
        end
        where[i] = w
      end
      local next_rows = {}
      for _, row in ipairs(rows) do
        for i = 0, ks[d] - 1 do
          local w, nr, c = where[i], {}, 0
          for _, base in ipairs(row) do
            for o = 0, outs[d] - 1 do
              c = c + 1
              nr[c] = (base >= 0 and w[o] >= 0) and base * sizes[d] + w[o] or -1
            end
          end
          next_rows[#next_rows + 1] = nr
        end
      end
      rows = next_rows
    end
    local idx = hl.array(rows, "int32")
    window_cache[key] = idx
    return idx, outs
  end

  -- x (N, C, spatial...) -> (N, C, K, P): every window's elements, 0 outside the input
  local function windows(x, idx)
    local s = x.shape
    local flat = 1
    for d = 3, #s do flat = flat * s[d] end
    if not core.is_tracer(x) and x.device ~= idx.device then idx = idx:to(x.device) end
    return core.gather(hl.reshape(x, {s[1], s[2], flat}), idx, 2), idx
  end

  local function check_input(op, x, n)
    if x.ndim ~= n + 2 then fail("%s: input must be %s, got shape %s", op, LAYOUT[n], shape_str(x.shape)) end
  end

  -- the convolution proper: x (N, C, S...), w (O, C / groups, k...), lists of per-dim geometry
  local function convolve(op, x, w, n, groups, strides, dils, lo, hi, gaps)
    local xs, ws = x.shape, w.shape
    local sizes, ks = {}, {}
    for d = 1, n do sizes[d], ks[d] = xs[d + 2], ws[d + 2] end
    local idx, outs = window_index(op, sizes, ks, strides, dils, lo, hi, gaps)
    local nb, c, o = xs[1], xs[2], ws[1]
    local k, p = 1, 1
    for d = 1, n do k, p = k * ks[d], p * outs[d] end
    local cols = windows(x, idx)                                               -- N, C, K, P
    cols = hl.transpose(cols, {2, 3, 1, 4})                                    -- C, K, N, P
    local y
    if groups == 1 then
      -- one (O, C*K) @ (C*K, N*P) matmul, the shape the engine's matmul schedule is fastest at
      y = hl.matmul(hl.reshape(w, {o, c * k}), hl.reshape(cols, {c * k, nb * p}))
    else
      local cg, og = c / groups, o / groups
      y = hl.matmul(hl.reshape(w, {groups, og, cg * k}), hl.reshape(cols, {groups, cg * k, nb * p}))
    end
    local shape, perm = {o, nb}, {2, 1}
    for d = 1, n do shape[d + 2], perm[d + 2] = outs[d], d + 2 end
    return hl.transpose(hl.reshape(y, shape), perm)
  end

  local function add_bias(op, y, b, o, n)
    if b == nil then return y end
    b = as_array(b, op)
    if b.ndim ~= 1 or b.shape[1] ~= o then
      fail("%s: bias must have shape [%d] (one per output channel), got %s", op, o, shape_str(b.shape))
    end
    local s = {o}
    for d = 1, n do s[d + 1] = 1 end
    return y + hl.reshape(b, s)
  end

  local function check_groups(op, g)
    if g == nil then return 1 end
    if not is_int(g) or g < 1 then fail("%s: groups must be a positive integer, got %s", op, tostring(g)) end
    return g
  end

  local CONV_OPTS = {"bias", "stride", "padding", "dilation", "groups"}

  -- conv(x, w [, opts]) with n spatial dims (from w when n is nil)
  -- what both convolutions check first: x and w arrays, the options (names), the spatial rank n
  -- (from the weights, laid out as `layout`, when nil) and the groups
  local function conv_args(op, x, w, opts, n, names, kernels, layout)
    x, w = as_array(x, op, 1), as_array(w, op, 2)
    if opts ~= nil and (type(opts) ~= "table" or is_array(opts)) then fail("%s: options must be a table, got %s", op, type(opts)) end
    opts = util.options(op, opts, names)
    if n == nil then
      n = w.ndim - 2
      if n < 1 or n > 3 then fail("%s: weights must be (%s, k...) with 1 to 3 spatial axes, got shape %s", op, layout, shape_str(w.shape)) end
    end
    check_input(op, x, n)
    if w.ndim ~= n + 2 then fail("%s: weights must be %s, got shape %s", op, kernels[n], shape_str(w.shape)) end
    return x, w, opts, n, check_groups(op, opts.groups)
  end

  local function conv(op, x, w, opts, n)
    local groups
    x, w, opts, n, groups = conv_args(op, x, w, opts, n, CONV_OPTS, KERNEL, "out, in/groups")
    local xs, ws = x.shape, w.shape
    if ws[2] * groups ~= xs[2] then
      if groups == 1 then
        fail("%s: input has %d channels but weights %s expect %d", op, xs[2], shape_str(ws), ws[2])
      end
      fail("%s: input has %d channels but weights %s with groups = %d expect %d (in / groups = %d)", op, xs[2],
           shape_str(ws), groups, ws[2] * groups, ws[2])
    end
    if ws[1] % groups ~= 0 then
      fail("%s: %d output channels do not divide into groups = %d", op, ws[1], groups)
    end
    local strides = per_dim(op, "stride", opts.stride or 1, n)
    local dils = per_dim(op, "dilation", opts.dilation or 1, n)
    local sizes, ks, gaps = {}, {}, {}
    for d = 1, n do sizes[d], ks[d], gaps[d] = xs[d + 2], ws[d + 2], 1 end
    local lo, hi = paddings(op, opts.padding or 0, n, sizes, ks, strides, dils)
    local y = convolve(op, x, w, n, groups, strides, dils, lo, hi, gaps)
    return add_bias(op, y, opts.bias, ws[1], n)
  end

  -- conv1d / conv2d / conv3d(x, w [, opts]): x (N, C, spatial...), w (O, C / groups, k...);
  -- opts.bias (O), stride, padding, dilation, groups. Cross-correlation, as PyTorch and JAX.
  function nn.conv(x, w, opts) return conv("conv", x, w, opts) end
  function nn.conv1d(x, w, opts) return conv("conv1d", x, w, opts, 1) end
  function nn.conv2d(x, w, opts) return conv("conv2d", x, w, opts, 2) end
  function nn.conv3d(x, w, opts) return conv("conv3d", x, w, opts, 3) end

  -- conv_transpose(x, w [, opts]) as PyTorch's ConvTranspose: w (C, O / groups, k...), the
  -- gradient of a convolution with respect to its input. Computed as the convolution of x spread
  -- by the stride (gap - 1 holes) and padded by dilation * (k - 1) - padding (+ output_padding on
  -- the high side), with the weights flipped and their in/out axes swapped per group.
  local function conv_transpose(op, x, w, opts, n)
    local groups
    x, w, opts, n, groups = conv_args(op, x, w, opts, n, {"bias", "stride", "padding", "output_padding", "dilation", "groups"},
                                      TKERNEL, "in, out/groups")
    local xs, ws = x.shape, w.shape
    if ws[1] ~= xs[2] then
      fail("%s: input has %d channels but weights %s expect %d (weights are %s)", op, xs[2], shape_str(ws), ws[1], TKERNEL[n])
    end
    if ws[1] % groups ~= 0 then fail("%s: %d input channels do not divide into groups = %d", op, ws[1], groups) end
    local strides = per_dim(op, "stride", opts.stride or 1, n)
    local dils = per_dim(op, "dilation", opts.dilation or 1, n)
    local pads = per_dim(op, "padding", opts.padding or 0, n, true)
    local outpad = per_dim(op, "output_padding", opts.output_padding or 0, n, true)
    local lo, hi, ones, flip = {}, {}, {}, {}
    for d = 1, n do
      if outpad[d] >= math.max(strides[d], dils[d]) then
        fail("%s: output_padding %d must be smaller than the stride or the dilation (%d, %d)", op, outpad[d], strides[d], dils[d])
      end
      local e = dils[d] * (ws[d + 2] - 1)
      local size = (xs[d + 2] - 1) * strides[d] - 2 * pads[d] + e + outpad[d] + 1
      if size < 1 then
        fail("%s: padding %d leaves spatial axis %d of the output %d long (input %s, weights %s); use less padding",
             op, pads[d], d, size, shape_str(xs), shape_str(ws))
      end
      lo[d], hi[d], ones[d], flip[d] = e - pads[d], e - pads[d] + outpad[d], 1, d + 2
    end
    -- (C, Og, k...) -> (G, Cg, Og, k...) -> (G, Og, Cg, k...) -> (O, Cg, k...), flipped
    local cg, og = ws[1] / groups, ws[2]
    local gshape, perm, oshape = {groups, cg, og}, {1, 3, 2}, {groups * og, cg}
    for d = 1, n do gshape[d + 3], perm[d + 3], oshape[d + 2] = ws[d + 2], d + 3, ws[d + 2] end
    local wf = hl.flip(hl.reshape(hl.transpose(hl.reshape(w, gshape), perm), oshape), flip)
    local y = convolve(op, x, wf, n, groups, ones, dils, lo, hi, strides)
    return add_bias(op, y, opts.bias, groups * og, n)
  end

  function nn.conv_transpose(x, w, opts) return conv_transpose("conv_transpose", x, w, opts) end
  function nn.conv_transpose1d(x, w, opts) return conv_transpose("conv_transpose1d", x, w, opts, 1) end
  function nn.conv_transpose2d(x, w, opts) return conv_transpose("conv_transpose2d", x, w, opts, 2) end
  function nn.conv_transpose3d(x, w, opts) return conv_transpose("conv_transpose3d", x, w, opts, 3) end

  ---------------------------------------------------------------- 2-D pooling

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

  -- the shared part of the pools: validate, then every window's elements (N, C, K, ho*wo) and
  -- the window positions (-1 in the padding)
  local function pool_windows(op, x, size, opts)
    if opts ~= nil and (type(opts) ~= "table" or is_array(opts)) then fail("%s: options must be a table, got %s", op, type(opts)) end
    opts = util.options(op, opts, {"stride", "padding"})
    check_input(op, x, 2)
    local kh, kw = pair(op, "size", size)
    local sh, sw = pair(op, "stride", opts.stride or {kh, kw})
    local ph, pw = pair(op, "padding", opts.padding or 0, true)
    if ph * 2 > kh or pw * 2 > kw then fail("%s: padding {%d, %d} is more than half the %dx%d window", op, ph, pw, kh, kw) end
    local s = x.shape
    local idx, outs = window_index(op, {s[3], s[4]}, {kh, kw}, {sh, sw}, {1, 1}, {ph, pw}, {ph, pw}, {1, 1})
    local vals
    vals, idx = windows(x, idx)
    return vals, outs[1], outs[2], idx
  end

  -- max_pool2d(x, size [, opts]): opts.stride (default: the size), opts.padding (-inf)
  function nn.max_pool2d(x, size, opts)
    x = as_array(x, "max_pool2d")
    local padded = type(opts) == "table" and opts.padding and opts.padding ~= 0
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

  for _, name in ipairs {"conv", "conv1d", "conv2d", "conv3d", "conv_transpose", "conv_transpose1d", "conv_transpose2d",
                         "conv_transpose3d", "max_pool2d", "avg_pool2d"} do
    nn[name] = shared.named(name, nn[name])
  end
end
