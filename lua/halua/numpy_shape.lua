-- NumPy's array manipulation and products, composed of primitives (slices, gathers with index
-- arrays fixed at trace time, concatenate, matmul), so each traces, differentiates and batches:
-- pad's modes, roll, rot90, meshgrid, tril, triu, tensordot, kron, cross, convolve, correlate.
-- shared: init.lua's helpers {as_array, norm_axis, norm_axes, named, methods}.
return function(hl, core, shared)
  local util = require "halua.util"
  local fail, as_array, norm_axis, norm_axes = util.fail, shared.as_array, shared.norm_axis, shared.norm_axes
  local is_array, is_tracer = core.is_array, core.is_tracer
  local shape_str = util.shape_str
  local is_int = util.is_integer
  local is_opts = util.is_options

  -- x's elements at the 0-based positions `idx` (a Lua list) along axis a (0-based): one gather
  -- whose index array is a constant of the trace (its gradient is a scatter_add)
  local function pick(x, idx, a)
    local i = hl.array(idx, "int32")
    if #idx == 0 then i = hl.zeros({0}, "int32") end
    if not is_tracer(x) and i.device ~= x.device then i = i:to(x.device) end
    return core.gather(x, i, a)
  end

  ---------------------------------------------------------------- pad

  local pad_modes = {constant = true, edge = true, reflect = true, symmetric = true, wrap = true}

  -- the source position (0-based) of padded position p (0-based from -before) on an axis of n
  local source = {
    edge = function(p, n) return math.max(0, math.min(p, n - 1)) end,
    wrap = function(p, n) return p % n end,
    reflect = function(p, n)
      if n == 1 then return 0 end
      local m = p % (2 * (n - 1))
      return m < n and m or 2 * (n - 1) - m
    end,
    symmetric = function(p, n)
      local m = p % (2 * n)
      return m < n and m or 2 * n - 1 - m
    end,
  }

  -- pad(x, width [, value | mode | {mode =, value =}]): width a number (every side), {before,
  -- after} (every axis) or one such pair per axis. Modes as NumPy's: constant (value, default 0),
  -- edge, reflect, symmetric, wrap (widths past the axis length repeat the pattern)
  function hl.pad(x, width, value)
    x = as_array(x, "pad")
    local mode = "constant"
    if type(value) == "string" then
      mode, value = value, nil
    elseif type(value) == "table" and not is_array(value) then
      local o = util.options("pad", value, {"mode", "value"}, "{mode = \"reflect\"}")
      mode, value = o.mode or "constant", o.value
    end
    if not pad_modes[mode] then
      fail("pad: unknown mode '%s' (the modes are constant, edge, reflect, symmetric, wrap)", tostring(mode))
    end
    if mode ~= "constant" and value ~= nil then fail("pad: a value is only used by mode constant, not %s", mode) end
    value = value or 0
    if type(value) ~= "number" and type(value) ~= "boolean" then fail("pad: the value must be a number, got %s", type(value)) end
    local per = {}
    if type(width) == "table" and type(width[1]) == "table" and #width ~= x.ndim then
      fail("pad: %d pairs of widths for an array of %d axes (give one pair per axis, or one pair for all)", #width, x.ndim)
    end
    for d = 1, x.ndim do
      local w = width
      if type(w) == "table" and type(w[1]) == "table" then w = width[d] end
      if type(w) == "number" then w = {w, w} end
      if type(w) ~= "table" or not is_int(w[1]) or not is_int(w[2]) or w[1] < 0 or w[2] < 0 then
        fail("pad: widths must be non-negative integers: a number, {before, after}, or one pair per axis")
      end
      per[d] = w
    end
    for d = 1, x.ndim do
      local before, after = per[d][1], per[d][2]
      if before > 0 or after > 0 then
        if mode == "constant" then
          local parts = {}
          local s = x.shape
          if before > 0 then
            s[d] = before
            parts[#parts + 1] = hl.fill_like(x, value, s, x.dtype)
          end
          parts[#parts + 1] = x
          if after > 0 then
            s = x.shape
            s[d] = after
            parts[#parts + 1] = hl.fill_like(x, value, s, x.dtype)
          end
          x = hl.concatenate(parts, d)
        else
          local n = x.shape[d]
          if n == 0 then fail("pad: mode %s cannot extend axis %d of length 0 (shape %s)", mode, d, shape_str(x.shape)) end
          local idx = {}
          for p = -before, n + after - 1 do idx[#idx + 1] = source[mode](p, n) end
          x = pick(x, idx, d - 1)
        end
      end
    end
    return x
  end

  ---------------------------------------------------------------- rearranging

  -- roll(x, shift [, axis]): elements moved shift places along axis (wrapping round); shift and
  -- axis may be lists of equal length; without an axis the flattened x is rolled, shape kept
  function hl.roll(x, shift, axis)
    x = as_array(x, "roll")
    if axis == nil then
      if type(shift) ~= "number" then
        if type(shift) == "table" and #shift == 1 then shift = shift[1] else
          fail("roll: without an axis the shift must be one integer, got %s", type(shift))
        end
      end
      return hl.reshape(hl.roll(hl.reshape(x, {x.size}), shift, 1), x.shape)
    end
    local shifts, axes = type(shift) == "table" and shift or {shift}, type(axis) == "table" and axis or {axis}
    if #shifts ~= #axes then
      if #shifts == 1 then for i = 2, #axes do shifts[i] = shifts[1] end
      elseif #axes == 1 then for i = 2, #shifts do axes[i] = axes[1] end
      else fail("roll: %d shifts for %d axes (give one shift, or one per axis)", #shifts, #axes) end
    end
    local total = {}
    for i, s in ipairs(shifts) do
      if not is_int(s) then fail("roll: shifts must be integers, got %s", tostring(s)) end
      local a = norm_axis("roll", axes[i], x.ndim)
      total[a] = (total[a] or 0) + s
    end
    for a, s in pairs(total) do
      local n = x.shape[a + 1]
      if n > 0 and s % n ~= 0 then
        local idx = {}
        for p = 0, n - 1 do idx[p + 1] = (p - s) % n end
        x = pick(x, idx, a)
      end
    end
    return x
  end

  -- rot90(x [, k] [, axes]): rotated k quarter turns in the plane of axes (default {1, 2}), from
  -- the first axis towards the second, as NumPy's
  function hl.rot90(x, k, axes)
    x = as_array(x, "rot90")
    if type(k) == "table" then k, axes = nil, k end
    k = k or 1
    if not is_int(k) then fail("rot90: k must be an integer, got %s", tostring(k)) end
    axes = axes or {1, 2}
    if type(axes) ~= "table" or #axes ~= 2 then fail("rot90: axes must be a pair of axes {a, b}") end
    if x.ndim < 2 then fail("rot90: needs at least 2 axes, got shape %s", shape_str(x.shape)) end
    local a, b = norm_axis("rot90", axes[1], x.ndim), norm_axis("rot90", axes[2], x.ndim)
    if a == b then fail("rot90: the axes must differ, got %d and %d", axes[1], axes[2]) end
    k = k % 4
    if k == 0 then return x end
    if k == 2 then return hl.flip(x, {a + 1, b + 1}) end
    local perm = {}
    for i = 1, x.ndim do perm[i] = i end
    perm[a + 1], perm[b + 1] = b + 1, a + 1
    if k == 1 then return hl.transpose(hl.flip(x, b + 1), perm) end
    return hl.flip(hl.transpose(x, perm), b + 1)
  end

  -- meshgrid(x1, x2, ... [, {indexing = "xy" | "ij"}]) or meshgrid({x1, x2, ...} [, opts]):
  -- coordinate arrays from 1-D ones (flattened); "xy"
  -- (default, NumPy's) swaps the first two output axes, "ij" keeps the inputs' order
  function hl.meshgrid(...)
    local args = {...}
    local opts = {}
    if is_opts(args[#args]) then opts = table.remove(args) end
    util.options("meshgrid", opts, {"indexing"}, "{indexing = \"ij\"}")
    -- one list of arrays works too: meshgrid({x, y})
    if #args == 1 and type(args[1]) == "table" and is_array(args[1][1]) then args = {unpack(args[1])} end
    local indexing = opts.indexing or "xy"
    if indexing ~= "xy" and indexing ~= "ij" then fail("meshgrid: indexing must be \"xy\" or \"ij\", got %s", tostring(indexing)) end
    local n = #args
    local xs, shape = {}, {}
    for i, v in ipairs(args) do
      if type(v) == "table" and not is_array(v) then v = hl.array(v) end
      v = as_array(v, "meshgrid", i)
      xs[i] = hl.reshape(v, {v.size})
      shape[i] = v.size
    end
    if indexing == "xy" and n >= 2 then shape[1], shape[2] = shape[2], shape[1] end
    local out = {}
    for i, v in ipairs(xs) do
      local s = {}
      for d = 1, n do s[d] = 1 end
      local at = i
      if indexing == "xy" and n >= 2 and i <= 2 then at = 3 - i end
      s[at] = v.size
      out[i] = hl.broadcast_to(hl.reshape(v, s), shape)
    end
    return unpack(out)
  end

  -- the mask col - row <= k (tril) or >= k (triu) over x's last two axes; a 1-D x is a row
  -- repeated to a square, as NumPy's
  local function triangle(op, keep)
    return function(x, k)
      x = as_array(x, op)
      k = k or 0
      if not is_int(k) then fail("%s: k must be an integer (the diagonal's offset), got %s", op, tostring(k)) end
      if x.ndim == 0 then fail("%s: needs at least 1 axis, got a 0-d array", op) end
      if x.ndim == 1 then x = hl.broadcast_to(x, {x.shape[1], x.shape[1]}) end
      local s = x.shape
      local r, c = s[#s - 1], s[#s]
      local rows = core.iota("int32", {r, c}, 0)
      local cols = core.iota("int32", {r, c}, 1)
      local m = keep(cols - rows, k)
      if not is_tracer(x) and m.device ~= x.device then m = m:to(x.device) end
      return hl.where(m, x, hl.zeros_like(x))
    end
  end
  hl.tril = triangle("tril", function(d, k) return hl.le(d, k) end)
  hl.triu = triangle("triu", function(d, k) return hl.ge(d, k) end)

  ---------------------------------------------------------------- products

  -- tensordot(a, b [, axes]): axes a count N (a's last N with b's first N, default 2) or a pair
  -- of lists {{a's axes}, {b's axes}} (1-based), summed in pairs; a's free axes then b's
  function hl.tensordot(a, b, axes)
    a, b = as_array(a, "tensordot", 1), as_array(b, "tensordot", 2)
    axes = axes == nil and 2 or axes
    local aa, ba = {}, {}
    if type(axes) == "number" then
      if not is_int(axes) or axes < 0 or axes > a.ndim or axes > b.ndim then
        fail("tensordot: axes %s must be a count 0..%d for shapes %s and %s", tostring(axes), math.min(a.ndim, b.ndim),
             shape_str(a.shape), shape_str(b.shape))
      end
      for i = 1, axes do aa[i], ba[i] = a.ndim - axes + i - 1, i - 1 end
    elseif type(axes) == "table" and #axes == 2 then
      local x, y = axes[1], axes[2]
      if type(x) == "number" then x = {x} end
      if type(y) == "number" then y = {y} end
      if type(x) ~= "table" or type(y) ~= "table" or #x ~= #y then
        fail("tensordot: axes must be a count or a pair of equally long lists {{a's axes}, {b's axes}}")
      end
      for i = 1, #x do aa[i], ba[i] = norm_axis("tensordot", x[i], a.ndim), norm_axis("tensordot", y[i], b.ndim) end
    else
      fail("tensordot: axes must be a count or a pair of lists {{a's axes}, {b's axes}}, got %s", type(axes))
    end
    local ina, inb, k = {}, {}, 1
    for i = 1, #aa do
      if ina[aa[i]] or inb[ba[i]] then fail("tensordot: an axis is repeated in axes") end
      ina[aa[i]], inb[ba[i]] = true, true
      local ea, eb = a.shape[aa[i] + 1], b.shape[ba[i] + 1]
      if ea ~= eb then
        fail("tensordot: a's axis %d has %d elements and b's axis %d has %d (shapes %s and %s)", aa[i] + 1, ea, ba[i] + 1, eb,
             shape_str(a.shape), shape_str(b.shape))
      end
      k = k * ea
    end
    local pa, pb, free, m, n = {}, {}, {}, 1, 1
    for d = 0, a.ndim - 1 do
      if not ina[d] then pa[#pa + 1], free[#free + 1], m = d + 1, a.shape[d + 1], m * a.shape[d + 1] end
    end
    for _, d in ipairs(aa) do pa[#pa + 1] = d + 1 end
    for _, d in ipairs(ba) do pb[#pb + 1] = d + 1 end
    for d = 0, b.ndim - 1 do
      if not inb[d] then pb[#pb + 1], free[#free + 1], n = d + 1, b.shape[d + 1], n * b.shape[d + 1] end
    end
    local ma = hl.reshape(a.ndim > 0 and hl.transpose(a, pa) or a, {m, k})
    local mb = hl.reshape(b.ndim > 0 and hl.transpose(b, pb) or b, {k, n})
    return hl.reshape(hl.matmul(ma, mb), free)
  end

  -- kron(a, b): the Kronecker product (blocks a[i] * b), the shorter shape padded with leading 1s
  function hl.kron(a, b)
    a, b = as_array(a, "kron", 1), as_array(b, "kron", 2)
    local nd = math.max(a.ndim, b.ndim)
    local sa, sb = {}, {}
    for i = 1, nd do
      sa[i] = a.shape[i - (nd - a.ndim)] or 1
      sb[i] = b.shape[i - (nd - b.ndim)] or 1
    end
    local ia, ib, out = {}, {}, {}
    for i = 1, nd do
      ia[2 * i - 1], ia[2 * i] = sa[i], 1
      ib[2 * i - 1], ib[2 * i] = 1, sb[i]
      out[i] = sa[i] * sb[i]
    end
    return hl.reshape(hl.reshape(a, ia) * hl.reshape(b, ib), out)
  end

  -- cross(a, b [, axis | {axis =}]): the cross product of 3-vectors (or 2-vectors: z = 0; two
  -- 2-vectors give the z component alone, as NumPy) along axis (default the last); the other
  -- axes broadcast
  function hl.cross(a, b, axis)
    a, b = as_array(a, "cross", 1), as_array(b, "cross", 2)
    if is_opts(axis) then axis = util.options("cross", axis, {"axis"}, "{axis = 1}").axis end
    axis = axis or -1
    if a.ndim == 0 or b.ndim == 0 then fail("cross: needs vectors, got shapes %s and %s", shape_str(a.shape), shape_str(b.shape)) end
    local aa, ba = norm_axis("cross", axis, a.ndim), norm_axis("cross", axis, b.ndim)
    local na, nb = a.shape[aa + 1], b.shape[ba + 1]
    if (na ~= 2 and na ~= 3) or (nb ~= 2 and nb ~= 3) then
      fail("cross: the vectors along axis %s must have 2 or 3 components, got %d and %d (shapes %s and %s)", tostring(axis),
           na, nb, shape_str(a.shape), shape_str(b.shape))
    end
    local function comps(x, ax, n)
      local c = {}
      local s = x.shape
      table.remove(s, ax + 1)
      for i = 1, n do c[i] = hl.reshape(util.slice_axis(core, x, ax, i - 1, 1), s) end
      return c
    end
    local x, y = comps(a, aa, na), comps(b, ba, nb)
    local cz = x[1] * y[2] - x[2] * y[1]
    if na == 2 and nb == 2 then return cz end
    local r
    if na == 2 then r = {x[2] * y[3], -(x[1] * y[3]), cz}
    elseif nb == 2 then r = {-(x[3] * y[2]), x[3] * y[1], cz}
    else r = {x[2] * y[3] - x[3] * y[2], x[3] * y[1] - x[1] * y[3], cz} end
    -- the result's vector axis: where the inputs had it (counted on the broadcast result)
    local nd = r[1].ndim + 1
    local at = axis < 0 and nd + axis + 1 or axis
    return hl.stack(r, math.max(1, math.min(at, nd)))
  end

  -- the full discrete convolution of the 1-D a and v (m = #v). For a short v, the sum of m
  -- shifted slices of the zero-padded a times v's elements (O(n) memory, fused under jit). For a
  -- long one, the (m, n + m - 1) matrix of a's windows, made by views alone (row r of the
  -- padded a repeated and reshaped to rows one longer starts at its element r), times the
  -- reversed v: one matmul rather than a graph of 3m ops (a gather of the windows was 25x slower)
  local SHORT_KERNEL = 48
  local function full_conv(a, v)
    local n, m = a.shape[1], v.shape[1]
    local p = hl.pad(a, {m - 1, m - 1})
    local len = n + m - 1
    if m <= SHORT_KERNEL then
      local acc
      for j = 0, m - 1 do
        local term = core.slice(p, {m - 1 - j}, {1}, {len}) * v[j + 1]
        acc = acc and acc + term or term
      end
      return acc
    end
    local L = p.shape[1]
    local rep = hl.reshape(hl.broadcast_to(hl.reshape(p, {1, L}), {m + 1, L}), {(m + 1) * L})
    local rows = hl.reshape(core.slice(rep, {0}, {1}, {m * (L + 1)}), {m, L + 1})
    local windows = core.slice(rows, {0, 0}, {1, 1}, {m, len})
    return hl.reshape(hl.matmul(hl.reshape(hl.flip(v), {1, m}), windows), {len})
  end

  local function conv_args(op, a, v, mode, default)
    if type(a) == "table" and not is_array(a) then a = hl.array(a) end
    if type(v) == "table" and not is_array(v) then v = hl.array(v) end
    a, v = as_array(a, op, 1), as_array(v, op, 2)
    if is_opts(mode) then mode = util.options(op, mode, {"mode"}, "{mode = \"same\"}").mode end
    mode = mode or default
    if mode ~= "full" and mode ~= "same" and mode ~= "valid" then
      fail("%s: mode must be \"full\", \"same\" or \"valid\", got %s", op, tostring(mode))
    end
    if a.ndim ~= 1 or v.ndim ~= 1 then fail("%s: a and v must be 1-D, got shapes %s and %s", op, shape_str(a.shape), shape_str(v.shape)) end
    if a.size == 0 or v.size == 0 then fail("%s: a and v must not be empty (shapes %s and %s)", op, shape_str(a.shape), shape_str(v.shape)) end
    local t = (hl.zeros({}, a.dtype) + hl.zeros({}, v.dtype)).dtype
    if t == "bool" then t = "int32" end
    return a:astype(t), v:astype(t), mode
  end

  -- the part of the full result (length n + m - 1) a mode keeps, as NumPy's
  local function crop(full, n, m, mode)
    if mode == "full" then return full end
    local long, short = math.max(n, m), math.min(n, m)
    local from, len
    if mode == "same" then from, len = math.floor((short - 1) / 2), long
    else from, len = short - 1, long - short + 1 end
    return full[{{from + 1, from + len}}]
  end

  -- convolve(a, v [, mode]): the discrete linear convolution of two 1-D arrays, mode "full"
  -- (default, n + m - 1), "same" (max(n, m), centred) or "valid" (max - min + 1), as NumPy's
  function hl.convolve(a, v, mode)
    local m
    a, v, m = conv_args("convolve", a, v, mode, "full")
    return crop(full_conv(a, v), a.size, v.size, m)
  end

  -- correlate(a, v [, mode]): the cross-correlation sum_n a[n + k] v[n], mode "valid" (default,
  -- as NumPy's), "same" or "full"
  function hl.correlate(a, v, mode)
    local m
    a, v, m = conv_args("correlate", a, v, mode, "valid")
    local n, k = a.size, v.size
    if k > n then   -- NumPy swaps the operands and reverses the result
      return hl.flip(crop(full_conv(v, hl.flip(a)), k, n, m))
    end
    return crop(full_conv(a, hl.flip(v)), n, k, m)
  end

  for _, name in ipairs {"pad", "roll", "rot90", "meshgrid", "tril", "triu", "tensordot", "kron", "cross", "convolve", "correlate"} do
    hl[name] = shared.named(name, hl[name])
  end
  for _, name in ipairs {"pad", "roll", "rot90", "tril", "triu"} do shared.methods[name] = hl[name] end
end
