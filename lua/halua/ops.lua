-- Composite operations over the primitives: statistics (var, std, all, any), outer, scans (cumsum,
-- cumprod), and shape operations (flip, stack, split, tile, repeat, take, take_along_axis,
-- one_hot). Being ordinary ops, they trace into pipelines and differentiate like any other.
-- u: init.lua's helpers {fail, as_array, norm_axis, norm_axes, named, methods}.
return function(hl, core, shared)
  local util = require "halua.util"
  local fail, as_array, norm_axis, norm_axes = util.fail, shared.as_array, shared.norm_axis, shared.norm_axes
  local is_array = core.is_array

  local shape_str = util.shape_str
  local is_float, is_int = util.is_full_float, util.is_integer

  ---------------------------------------------------------------- statistics

  -- the variance with NumPy's default (ddof 0: divided by the count)
  function hl.var(x, axes, keepdims)
    x = as_array(x, "var")
    if type(axes) == "boolean" then axes, keepdims = nil, axes end
    if x.dtype == "float16" or x.dtype == "bfloat16" then return hl.var(x:astype("float32"), axes, keepdims):astype(x.dtype) end
    if x.dtype == "complex64" or x.dtype == "complex128" then
      -- NumPy's: the mean of |x - mean|^2, a real array
      local d = x - hl.mean(x, axes, true)
      local re, im = hl.real(d), hl.imag(d)
      return hl.mean(re * re + im * im, axes, keepdims)
    end
    if not is_float(x.dtype) then x = x:astype("float32") end
    local d = x - hl.mean(x, axes, true)
    return hl.mean(d * d, axes, keepdims)
  end
  function hl.std(x, axes, keepdims)
    x = as_array(x, "std")
    if type(axes) == "boolean" then axes, keepdims = nil, axes end
    -- float16 and bfloat16: the square root of the float32 variance, rounded once (the root of
    -- the rounded variance was a unit off, more once a log near 1 amplified it)
    if x.dtype == "float16" or x.dtype == "bfloat16" then return hl.std(x:astype("float32"), axes, keepdims):astype(x.dtype) end
    return hl.sqrt(hl.var(x, axes, keepdims))
  end

  local function counted(op, pick, test)
    return function(x, axes, keepdims)
      x = as_array(x, op)
      if type(axes) == "boolean" then axes, keepdims = nil, axes end
      return test(hl.sum(pick(x):astype("int32"), axes, keepdims))
    end
  end
  hl.any = counted("any", function(x) return hl.ne(x, 0) end, function(n) return hl.gt(n, 0) end)
  hl.all = counted("all", function(x) return hl.eq(x, 0) end, function(n) return hl.eq(n, 0) end)

  function hl.outer(a, b)
    a, b = as_array(a, "outer", 1), as_array(b, "outer", 2)
    return hl.reshape(a, {a.size, 1}) * hl.reshape(b, {1, b.size})
  end

  ---------------------------------------------------------------- scans

  -- x shifted by d along axis a (0-based), the first d places filled with `fill`
  local function shifted(x, a, d, fill)
    local n = x.shape[a + 1]
    local starts, steps, counts = {}, {}, x.shape
    for i = 1, x.ndim do starts[i], steps[i] = 0, 1 end
    counts[a + 1] = n - d
    local body = core.slice(x, starts, steps, counts)
    local pad_shape = x.shape
    pad_shape[a + 1] = d
    return hl.concatenate({hl.fill_like(x, fill, pad_shape, x.dtype), body}, a + 1)
  end

  -- inclusive scans in log2(n) doubling steps (Hillis and Steele): each step combines every
  -- element with the one 2^k places before it
  local function scan(op, combine, identity)
    return function(x, axis)
      x = as_array(x, op)
      if axis == nil then
        x = hl.reshape(x, {x.size})
        axis = 1
      end
      local a = norm_axis(op, axis, x.ndim)
      if x.dtype == "bool" or x.dtype == "uint8" or x.dtype == "int8" then x = x:astype("int32") end
      local n, d = x.shape[a + 1], 1
      while d < n do
        x = combine(x, shifted(x, a, d, identity))
        d = d * 2
      end
      return x
    end
  end
  hl.cumsum = scan("cumsum", function(p, q) return p + q end, 0)
  hl.cumprod = scan("cumprod", function(p, q) return p * q end, 1)

  ---------------------------------------------------------------- shapes

  function hl.flip(x, axes)
    x = as_array(x, "flip")
    local starts, steps, counts = {}, {}, x.shape
    for i = 1, x.ndim do starts[i], steps[i] = 0, 1 end
    for _, a in ipairs(norm_axes("flip", axes, x.ndim)) do
      if counts[a + 1] > 0 then starts[a + 1], steps[a + 1] = counts[a + 1] - 1, -1 end
    end
    return core.slice(x, starts, steps, counts)
  end

  function hl.stack(list, axis)
    if type(list) ~= "table" or #list == 0 then fail("stack: expected a non-empty list of arrays") end
    local first = as_array(list[1], "stack")
    axis = axis or 1
    local parts = {}
    for i, x in ipairs(list) do
      x = as_array(x, "stack", i)
      if table.concat(x.shape, ",") ~= table.concat(first.shape, ",") then
        fail("stack: array %d has shape %s, array 1 has %s", i, shape_str(x.shape), shape_str(first.shape))
      end
      parts[i] = hl.expand_dims(x, axis)
    end
    return hl.concatenate(parts, axis)
  end

  -- split(x, n [, axis]): n equal parts; split(x, {i1, i2, ...} [, axis]): parts starting at the
  -- (1-based) positions i1, i2, ... (the first part starts at 1): np.split(x, [i1 - 1, i2 - 1])
  function hl.split(x, parts, axis)
    x = as_array(x, "split")
    local a = norm_axis("split", axis or 1, x.ndim)
    local n = x.shape[a + 1]
    local starts_at = {}
    if type(parts) == "number" then
      if not is_int(parts) or parts < 1 then fail("split: the number of parts must be a positive integer, got %s", tostring(parts)) end
      if n % parts ~= 0 then fail("split: axis %d of length %d does not divide into %d equal parts", a + 1, n, parts) end
      for k = 0, parts - 1 do starts_at[#starts_at + 1] = k * n / parts + 1 end
    elseif type(parts) == "table" then
      starts_at[1] = 1
      for _, p in ipairs(parts) do
        if not is_int(p) then fail("split: split positions must be integers, got %s", tostring(p)) end
        if p == 0 then fail("split: position 0 does not exist: positions are 1-based (1 is the first element, -1 the last)") end
        if p < 0 then p = n + 1 + p end   -- from the end, as indices are
        starts_at[#starts_at + 1] = math.max(1, math.min(p, n + 1))
      end
    else
      fail("split: expected a number of parts or a list of positions, got %s", type(parts))
    end
    local out = {}
    for k, s in ipairs(starts_at) do
      local e = (starts_at[k + 1] or n + 1) - 1
      out[k] = util.slice_axis(core, x, a, e >= s and s - 1 or 0, math.max(0, e - s + 1))
    end
    return out
  end

  local function reps_of(op, reps)
    if type(reps) == "number" then reps = {reps} end
    if type(reps) ~= "table" then fail("%s: expected a number or a table of repetitions, got %s", op, type(reps)) end
    for _, r in ipairs(reps) do
      if not is_int(r) or r < 0 then fail("%s: repetitions must be non-negative integers, got %s", op, tostring(r)) end
    end
    return reps
  end

  -- each axis d of length n becomes r*n: the whole axis repeated r times (NumPy's tile)
  function hl.tile(x, reps)
    x = as_array(x, "tile")
    reps = reps_of("tile", reps)
    local nd = math.max(x.ndim, #reps)
    local shape, r = {}, {}
    for i = 1, nd do
      shape[i] = x.shape[i - (nd - x.ndim)] or 1
      r[i] = reps[i - (nd - #reps)] or 1
    end
    local inter, target, final = {}, {}, {}
    for i = 1, nd do
      inter[#inter + 1], inter[#inter + 2] = 1, shape[i]
      target[#target + 1], target[#target + 2] = r[i], shape[i]
      final[i] = r[i] * shape[i]
    end
    return hl.reshape(hl.broadcast_to(hl.reshape(x, inter), target), final)
  end

  -- each element repeated r times along the axis (the flattened array when axis is nil)
  hl["repeat"] = function(x, r, axis)
    x = as_array(x, "repeat")
    if not is_int(r) or r < 0 then fail("repeat: repetitions must be a non-negative integer, got %s", tostring(r)) end
    if axis == nil then
      x = hl.reshape(x, {x.size})
      axis = 1
    end
    local a = norm_axis("repeat", axis, x.ndim)
    local s = x.shape
    local inter, target, final = {}, {}, {}
    for i = 1, x.ndim do
      inter[#inter + 1], target[#target + 1], final[i] = s[i], s[i], s[i]
      if i == a + 1 then
        inter[#inter + 1], target[#target + 1], final[i] = 1, r, s[i] * r
      end
    end
    return hl.reshape(hl.broadcast_to(hl.reshape(x, inter), target), final)
  end

  -- pad lives in numpy_shape.lua with its other modes

  ---------------------------------------------------------------- gathers

  -- x with axis a (0-based) and the last axis exchanged
  local function swap_last(x, a)
    local perm = {}
    for i = 1, x.ndim do perm[i] = i end
    perm[a + 1], perm[x.ndim] = x.ndim, a + 1
    return hl.transpose(x, perm)
  end

  -- the positions 1..n (of idx's dtype), on idx's device
  local function positions(idx, n)
    local p = hl.arange(n, idx.dtype) + 1
    if not core.is_tracer(idx) and p.device ~= idx.device then p = p:to(idx.device) end
    return p
  end

  -- eagerly, indices outside 1..n are an error; traced, they select nothing (zeros)
  local function check_indices(op, idx, n)
    if not is_array(idx) then idx = hl.asarray(idx) end
    if idx.dtype ~= "int32" and idx.dtype ~= "int64" and idx.dtype ~= "uint8" and idx.dtype ~= "int8" then
      fail("%s: indices must be integers, got %s", op, idx.dtype)
    end
    if not core.is_tracer(idx) and idx.size > 0 then
      local lo, hi = hl.min(idx):item(), hl.max(idx):item()
      if lo < 1 or hi > n then fail("%s: index %d is out of range 1..%d", op, lo < 1 and lo or hi, n) end
    end
    return idx
  end

  -- one_hot(idx, n): idx's shape plus an axis of n, 1 where the (1-based) index points
  function hl.one_hot(idx, n, dtype)
    if not is_int(n) or n < 0 then fail("one_hot: n must be a non-negative integer, got %s", tostring(n)) end
    if not is_array(idx) then idx = hl.asarray(idx) end
    if idx.dtype ~= "int32" and idx.dtype ~= "int64" and idx.dtype ~= "uint8" and idx.dtype ~= "int8" then
      fail("one_hot: indices must be integers, got %s", idx.dtype)
    end
    local s = idx.shape
    s[#s + 1] = 1
    return hl.eq(hl.reshape(idx, s), positions(idx, n)):astype(dtype or "float32")
  end

  -- the elements of x at positions idx along axis: x's shape with that axis replaced by idx's
  -- 0-based indices of idx's dtype for the gather primitive (uint8 is widened first: 0 - 1 must
  -- not wrap to 255, a valid position of a long axis)
  local function zero_based(idx)
    if idx.dtype == "uint8" or idx.dtype == "int8" then idx = idx:astype("int32") end
    return idx - 1
  end

  function hl.take(x, idx, axis)
    x = as_array(x, "take")
    if axis == nil then
      x = hl.reshape(x, {x.size})
      axis = 1
    end
    local a = norm_axis("take", axis, x.ndim)
    local n = x.shape[a + 1]
    idx = check_indices("take", idx, n)
    -- one gather: x's axis replaced by idx's axes; traced out-of-range indices read 0
    return core.gather(x, zero_based(idx), a)
  end

  -- out[..., j, ...] = x[..., idx[..., j, ...], ...] along axis; idx has x's rank, the other axes
  -- broadcast between x and idx
  function hl.take_along_axis(x, idx, axis)
    x = as_array(x, "take_along_axis")
    if not is_array(idx) then idx = hl.asarray(idx) end
    if idx.ndim ~= x.ndim then
      fail("take_along_axis: indices need the array's rank %d, got %d", x.ndim, idx.ndim)
    end
    local a = norm_axis("take_along_axis", axis or 1, x.ndim)
    local n = x.shape[a + 1]
    idx = check_indices("take_along_axis", idx, n)
    -- the axis last, the other axes broadcast to one batch of rows: then every index is a
    -- position in the flat (rows x n) array, and one gather reads them all
    local xs, is = swap_last(x, a), swap_last(idx, a)
    local xsh, ish, bsh = xs.shape, is.shape, {}
    local rows = 1
    for d = 1, #xsh - 1 do
      if xsh[d] ~= ish[d] and xsh[d] ~= 1 and ish[d] ~= 1 then
        fail("take_along_axis: array %s and indices %s do not broadcast off axis %d", shape_str(x.shape), shape_str(idx.shape), a + 1)
      end
      bsh[d] = math.max(xsh[d], ish[d])
      if xsh[d] == 0 or ish[d] == 0 then bsh[d] = 0 end
      rows = rows * bsh[d]
    end
    local m = ish[#ish]
    local function batch_and(last)
      local t = {unpack(bsh)}
      t[#t + 1] = last
      return t
    end
    local xb = hl.broadcast_to(xs, batch_and(n))
    local ib = hl.broadcast_to(zero_based(is), batch_and(m))
    local flat = hl.reshape(xb, {rows * n})
    local base = hl.reshape(hl.arange(rows, ib.dtype) * n, {rows, 1})
    if not core.is_tracer(ib) and base.device ~= ib.device then base = base:to(ib.device) end
    local lin = hl.reshape(ib, {rows, m})
    local picked = core.gather(flat, lin + base, 0)
    if core.is_tracer(lin) then   -- an out-of-range index must not read a neighbouring row
      picked = hl.where(hl.logical_and(hl.ge(lin, 0), hl.lt(lin, n)), picked, hl.zeros_like(picked))
    end
    return swap_last(hl.reshape(picked, batch_and(m)), a)
  end

  ---------------------------------------------------------------- einsum

  -- labels of x repeated within it become one (the diagonal); labels not in `keep` are summed
  local function reduce_labels(x, labels, keep)
    local i = 1
    while i <= #labels do
      local j = labels:find(labels:sub(i, i), i + 1, true)
      if j then   -- the diagonal of axes i and j: mask with the identity, sum axis j away
        local n = x.shape[i]
        if x.shape[j] ~= n then fail("einsum: label %s has extents %d and %d", labels:sub(i, i), n, x.shape[j]) end
        local s = {}
        for d = 1, x.ndim do s[d] = (d == i or d == j) and n or 1 end
        local eye = hl.reshape(hl.eq(hl.reshape(hl.arange(n), {n, 1}), hl.reshape(hl.arange(n), {1, n})), s)
        if not core.is_tracer(x) and eye.device ~= x.device then eye = eye:to(x.device) end
        x = hl.sum(hl.where(eye, x, 0), j)
        labels = labels:sub(1, j - 1) .. labels:sub(j + 1)
      else
        i = i + 1
      end
    end
    local drop = {}
    for d = 1, #labels do if not keep:find(labels:sub(d, d), 1, true) then drop[#drop + 1] = d end end
    if #drop > 0 then
      x = hl.sum(x, drop)
      local kept = ""
      for d = 1, #labels do if keep:find(labels:sub(d, d), 1, true) then kept = kept .. labels:sub(d, d) end end
      labels = kept
    end
    return x, labels
  end

  -- x (with `labels`) transposed to the label order `order`
  local function arrange(x, labels, order)
    if labels == order then return x end
    local perm = {}
    for d = 1, #order do perm[d] = labels:find(order:sub(d, d), 1, true) end
    return hl.transpose(x, perm)
  end

  local function extents(x, labels, into)
    for d = 1, #labels do
      local l, e = labels:sub(d, d), x.shape[d]
      if into[l] and into[l] ~= e and into[l] ~= 1 and e ~= 1 then fail("einsum: label %s has extents %d and %d", l, into[l], e) end
      into[l] = math.max(into[l] or e, e)
    end
  end

  -- einsum(spec, a [, b]): one or two operands, explicit ("ij,jk->ik") or implicit output
  -- (the labels used once, in alphabetical order); contractions become one batched matmul
  function hl.einsum(spec, ...)
    local ops = {...}
    if type(spec) ~= "string" then fail("einsum: the spec must be a string, got %s", type(spec)) end
    spec = spec:gsub("%s", "")
    if spec:find("...", 1, true) then fail("einsum: ellipsis ('...') is not supported yet; name every axis") end
    local ins, out = spec:match("^([^-]*)->(.*)$")
    ins = ins or spec
    local labels = {}
    for part in (ins .. ","):gmatch("([^,]*),") do labels[#labels + 1] = part end
    if #labels ~= #ops then fail("einsum: the spec names %d operands, got %d", #labels, #ops) end
    if #ops < 1 or #ops > 2 then fail("einsum: one or two operands are supported, got %d", #ops) end
    local count = {}
    for k, l in ipairs(labels) do
      if not l:match("^%a*$") then fail("einsum: operand %d's labels must be letters, got '%s'", k, l) end
      ops[k] = as_array(ops[k], "einsum", k + 1)
      if #l ~= ops[k].ndim then fail("einsum: operand %d has %d axes but '%s' names %d", k, ops[k].ndim, l, #l) end
      for c in l:gmatch(".") do count[c] = (count[c] or 0) + 1 end
    end
    if not out then
      local once = {}
      for c, n in pairs(count) do if n == 1 then once[#once + 1] = c end end
      table.sort(once)
      out = table.concat(once)
    end
    for c in out:gmatch(".") do
      if not count[c] then fail("einsum: output label %s is not in any operand", c) end
      if select(2, out:gsub(c, "")) > 1 then fail("einsum: output label %s is repeated", c) end
    end
    local ext = {}
    for k = 1, #ops do extents(ops[k], labels[k], ext) end
    if #ops == 1 then
      local x, l = reduce_labels(ops[1], labels[1], out)
      return arrange(x, l, out)
    end
    -- keep, per operand, the labels the output or the other operand needs
    local a, la = reduce_labels(ops[1], labels[1], out .. labels[2])
    local b, lb = reduce_labels(ops[2], labels[2], out .. la)
    local batch, contract, afree, bfree = "", "", "", ""
    for c in la:gmatch(".") do
      local in_b, in_out = lb:find(c, 1, true), out:find(c, 1, true)
      if in_b and in_out then batch = batch .. c
      elseif in_b then contract = contract .. c
      else afree = afree .. c end
    end
    for c in lb:gmatch(".") do if not la:find(c, 1, true) then bfree = bfree .. c end end
    local function size(ls) local n = 1 for c in ls:gmatch(".") do n = n * ext[c] end return n end
    local function dims(ls) local t = {} for c in ls:gmatch(".") do t[#t + 1] = ext[c] end return t end
    local bshape = dims(batch)
    a = hl.broadcast_to(arrange(a, la, batch .. afree .. contract), dims(batch .. afree .. contract))
    b = hl.broadcast_to(arrange(b, lb, batch .. contract .. bfree), dims(batch .. contract .. bfree))
    local m, kk, n = size(afree), size(contract), size(bfree)
    local as, bs = {}, {}
    for i, e in ipairs(bshape) do as[i], bs[i] = e, e end
    as[#as + 1], as[#as + 2] = m, kk
    bs[#bs + 1], bs[#bs + 2] = kk, n
    local r = hl.matmul(hl.reshape(a, as), hl.reshape(b, bs))
    r = hl.reshape(r, dims(batch .. afree .. bfree))
    return arrange(r, batch .. afree .. bfree, out)
  end

  for _, name in ipairs {"einsum", "var", "std", "any", "all", "outer", "cumsum", "cumprod", "flip", "stack", "split", "tile",
                         "repeat", "take", "take_along_axis", "one_hot"} do
    hl[name] = shared.named(name, hl[name])
  end
  for _, name in ipairs {"var", "std", "any", "all", "cumsum", "cumprod", "flip", "split", "tile", "repeat",
                         "take", "take_along_axis"} do
    shared.methods[name] = hl[name]
  end
end
