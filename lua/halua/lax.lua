-- hl.lax: JAX's lax functions that are not elementwise math: associative_scan, reduce_window,
-- top_k, cummax/cummin (built on associative_scan, also hl.cummax and methods), and the control
-- flow and checkpoint functions under their lax names (the same functions as hl.cond, hl.switch,
-- hl.scan, ... and hl.checkpoint: aliases, not copies). Everything here composes existing
-- primitives (strided slices, concatenation, argsort, gathers), so jit, grad and vmap come from
-- their rules; axes are 1-based, negative from the end.
return function(hl, core, shared)
  local util = require "halua.util"
  local tree = require "halua.tree"
  local fail, shape_str = util.fail, util.shape_str
  local is_array = core.is_array
  local L = {}

  local is_int = util.is_integer

  local axis0 = util.norm_axis   -- (op, axis, ndim) -> the 0-based axis
  local function slice_axis(x, a, start, count, step) return util.slice_axis(core, x, a, start, count, step) end


  ---------------------------------------------------------------- associative_scan

  -- The work-efficient scan (Blelloch; as jax.lax.associative_scan): combine neighbouring pairs,
  -- scan that half-length sequence recursively (its results are the prefixes at the odd places),
  -- then one more combine gives the even places. O(n) applications of fn over log2(n) levels.
  local function scan_leaves(fn, def, leaves, a)
    local n = leaves[1].shape[a + 1]
    if n < 2 then return leaves end
    local function call(x, y)
      local r = fn(tree.unflatten(def, x), tree.unflatten(def, y))
      local out, rdef = tree.flatten(r)
      if rdef ~= def or #out ~= #x then fail("lax.associative_scan: fn must return a tree of the same structure as its arguments, got %s", type(r)) end
      for j, l in ipairs(out) do
        if not is_array(l) or shape_str(l.shape) ~= shape_str(x[j].shape) then
          fail("lax.associative_scan: fn must return arrays of its arguments' shapes (%s), got %s", shape_str(x[j].shape),
               is_array(l) and shape_str(l.shape) or type(l))
        end
      end
      return out
    end
    local function each(f) local r = {} for j, l in ipairs(leaves) do r[j] = f(l) end return r end
    local half = math.floor(n / 2)
    local pairs_ = call(each(function(l) return slice_axis(l, a, 0, half, 2) end),
                        each(function(l) return slice_axis(l, a, 1, half, 2) end))
    local odd = scan_leaves(fn, def, pairs_, a)             -- prefixes ending at 0-based 1, 3, 5, ...
    local n_even = n - half                                  -- places 0, 2, 4, ...
    local even
    if n_even > 1 then
      local before = {}
      for j, o in ipairs(odd) do before[j] = slice_axis(o, a, 0, n_even - 1, 1) end
      local rest = call(before, each(function(l) return slice_axis(l, a, 2, n_even - 1, 2) end))
      even = {}
      for j, l in ipairs(leaves) do even[j] = hl.concatenate({slice_axis(l, a, 0, 1, 1), rest[j]}, a + 1) end
    else
      even = each(function(l) return slice_axis(l, a, 0, 1, 1) end)
    end
    -- interleave: even and odd stacked on a new axis after a, then merged into a
    local out = {}
    for j in ipairs(leaves) do
      local e, o = even[j], odd[j]
      if half < n_even then o = hl.concatenate({o, slice_axis(e, a, n_even - 1, 1, 1)}, a + 1) end
      local both = hl.concatenate({hl.expand_dims(e, a + 2), hl.expand_dims(o, a + 2)}, a + 2)
      local s = e.shape
      s[a + 1] = 2 * n_even
      local merged = hl.reshape(both, s)
      out[j] = half < n_even and slice_axis(merged, a, 0, n, 1) or merged
    end
    return out
  end

  function L.associative_scan(fn, elems, opts)
    if not util.is_callable(fn) then fail("lax.associative_scan: fn must be a function of two trees, got %s", type(fn)) end
    opts = util.options("lax.associative_scan", opts, {"reverse", "axis"}, "{axis = 1, reverse = true}")
    local leaves, def = tree.flatten(elems)
    if #leaves == 0 then fail("lax.associative_scan: elems holds no arrays") end
    local a, n
    for j, l in ipairs(leaves) do
      if type(l) == "number" then l = hl.array(l) end
      if not core.usable(l, "lax.associative_scan") then fail("lax.associative_scan: elems holds a %s; give arrays", type(l)) end
      if l.ndim == 0 then fail("lax.associative_scan: leaf %d is a 0-d array; the scanned axis needs at least one axis", j) end
      local aj = axis0("lax.associative_scan", opts.axis or 1, l.ndim)
      if n and l.shape[aj + 1] ~= n then
        fail("lax.associative_scan: leaf %d has %d elements along the scanned axis, leaf 1 has %d; they must agree (shapes %s and %s)",
             j, l.shape[aj + 1], n, shape_str(l.shape), shape_str(leaves[1].shape))
      end
      a, n = a or aj, n or l.shape[aj + 1]
      if aj ~= a then
        fail("lax.associative_scan: the axis names a different position in leaf %d; give leaves of one rank or a non-negative axis", j)
      end
      leaves[j] = l
    end
    if opts.reverse then for j, l in ipairs(leaves) do leaves[j] = hl.flip(l, a + 1) end end
    local out = scan_leaves(fn, def, leaves, a)
    if opts.reverse then for j, l in ipairs(out) do out[j] = hl.flip(l, a + 1) end end
    return tree.unflatten(def, out)
  end

  ---------------------------------------------------------------- cummax, cummin

  local function cumulative(op, combine)
    return function(x, axis, reverse)
      if not core.usable(x, op) then
        if type(x) ~= "number" then fail("%s: expected an array, got %s", op, type(x)) end
        x = hl.array(x)
      end
      if x.ndim == 0 then fail("%s: a 0-d array has no axis to accumulate along; reshape it to {1}", op) end
      if reverse ~= nil and type(reverse) ~= "boolean" then fail("%s: reverse must be a boolean, got %s", op, type(reverse)) end
      axis0(op, axis or 1, x.ndim)
      return L.associative_scan(combine, x, {axis = axis or 1, reverse = reverse or nil})
    end
  end
  L.cummax = cumulative("cummax", hl.maximum)
  L.cummin = cumulative("cummin", hl.minimum)

  ---------------------------------------------------------------- reduce_window

  -- the identities of max and min per dtype (int64's largest is the largest double below 2^63)
  local LOWEST = {int8 = -128, uint8 = 0, int32 = -2 ^ 31, int64 = -2 ^ 63, bool = false}
  local HIGHEST = {int8 = 127, uint8 = 255, int32 = 2 ^ 31 - 1, int64 = 2 ^ 63 - 1024, bool = true}
  local named_ops = {
    sum = {fn = function(p, q) return p + q end, init = function() return 0 end},
    max = {fn = hl.maximum, init = function(x) local v = LOWEST[x.dtype] if v == nil then v = -math.huge end return v end},
    min = {fn = hl.minimum, init = function(x) local v = HIGHEST[x.dtype] if v == nil then v = math.huge end return v end},
  }
  named_ops.add = named_ops.sum
  local function int_list(op, what, v, ndim, default, min)
    if v == nil then
      local r = {}
      for i = 1, ndim do r[i] = default end
      return r
    end
    if type(v) == "number" then v = {v} end
    if type(v) ~= "table" or #v ~= ndim then
      fail("%s: %s needs one entry per axis of the operand (%d), got %s", op, what, ndim, type(v) == "table" and #v .. " entries" or type(v))
    end
    for i = 1, ndim do
      if not is_int(v[i]) or v[i] < min then
        fail("%s: %s entry %d must be an integer >= %d, got %s", op, what, i, min, tostring(v[i]))
      end
    end
    return v
  end

  -- x padded along axis a (0-based) with lo and hi copies of value
  local function pad_axis(x, a, lo, hi, value)
    if lo == 0 and hi == 0 then return x end
    local parts = {}
    local s = x.shape
    if lo > 0 then s[a + 1] = lo; parts[#parts + 1] = hl.fill_like(x, value, s, x.dtype) end
    parts[#parts + 1] = x
    if hi > 0 then s = x.shape; s[a + 1] = hi; parts[#parts + 1] = hl.fill_like(x, value, s, x.dtype) end
    return hl.concatenate(parts, a + 1)
  end

  -- x with d - 1 copies of value between neighbours along axis a (0-based): n -> (n - 1) d + 1
  local function dilate_axis(x, a, d, value)
    local n = x.shape[a + 1]
    if d == 1 or n == 0 then return x end
    local holes = x.shape
    table.insert(holes, a + 2, d - 1)
    local e = hl.concatenate({hl.expand_dims(x, a + 2), hl.fill_like(x, value, holes, x.dtype)}, a + 2)
    local s = x.shape
    s[a + 1] = n * d
    return slice_axis(hl.reshape(e, s), a, 0, (n - 1) * d + 1, 1)
  end

  -- reduce_window(x, init, op, window_dims [, strides] [, padding] [, base_dilation] [, window_dilation])
  function L.reduce_window(x, init, op, window_dims, strides, padding, base_dilation, window_dilation)
    local name = "lax.reduce_window"
    if not core.usable(x, name) then fail("%s: expected an array operand, got %s", name, type(x)) end
    local fn, pad_value, known
    if type(op) == "string" then
      known = named_ops[op]
      if not known then fail("%s: op must be \"sum\", \"max\", \"min\" or a function of two arrays, got \"%s\"", name, op) end
      fn = known.fn
      if init == nil then init = known.init(x) end
    elseif util.is_callable(op) then
      fn = op
      -- hl.add, hl.maximum and hl.minimum are known: init defaults to their identity
      known = op == hl.add and named_ops.sum or op == hl.maximum and named_ops.max or op == hl.minimum and named_ops.min or nil
      if known and init == nil then init = known.init(x) end
    else
      fail("%s: op must be \"sum\", \"max\", \"min\" or a function of two arrays, got %s", name, type(op))
    end
    if init ~= nil and type(init) ~= "number" and type(init) ~= "boolean" then
      fail("%s: init must be a number (the reduction's identity, also the padding value), got %s", name, type(init))
    end
    if init == nil then
      fail("%s: a function op other than hl.add, hl.maximum or hl.minimum needs an init value (its identity, also used as padding)", name)
    end
    pad_value = init
    local nd = x.ndim
    if window_dims == nil then fail("%s: window_dims is missing: give the window's extent per axis, e.g. {2, 2}", name) end
    local w = int_list(name, "window_dims", window_dims, nd, nil, 1)
    local st = int_list(name, "strides", strides, nd, 1, 1)
    local bd = int_list(name, "base_dilation", base_dilation, nd, 1, 1)
    local wd = int_list(name, "window_dilation", window_dilation, nd, 1, 1)
    -- base dilation: bd - 1 holes holding init between neighbours, before any padding
    for i = 1, nd do x = dilate_axis(x, i - 1, bd[i], init) end
    local pads = {}
    padding = padding or "VALID"
    if type(padding) == "string" then
      local p = padding:upper()
      if p ~= "VALID" and p ~= "SAME" then
        fail("%s: padding must be \"VALID\", \"SAME\" or a table of {lo, hi} pairs, got \"%s\"", name, padding)
      end
      for i = 1, nd do
        local n, eff = x.shape[i], (w[i] - 1) * wd[i] + 1
        if p == "VALID" then
          pads[i] = {0, 0}
        else
          local out = math.ceil(n / st[i])
          local total = math.max((out - 1) * st[i] + eff - n, 0)
          pads[i] = {math.floor(total / 2), total - math.floor(total / 2)}
        end
      end
    elseif type(padding) == "table" and #padding == nd then
      for i = 1, nd do
        local pr = padding[i]
        if type(pr) ~= "table" or not is_int(pr[1]) or not is_int(pr[2]) or pr[1] < 0 or pr[2] < 0 then
          fail("%s: padding entry %d must be a pair {lo, hi} of non-negative integers", name, i)
        end
        pads[i] = pr
      end
    else
      fail("%s: padding must be \"VALID\", \"SAME\" or a table of %d {lo, hi} pairs", name, nd)
    end
    local xp = x
    for i = 1, nd do xp = pad_axis(xp, i - 1, pads[i][1], pads[i][2], pad_value) end
    local out_shape = {}
    for i = 1, nd do
      local eff = (w[i] - 1) * wd[i] + 1
      local n = xp.shape[i]
      if n < eff then
        fail("%s: the window (%d, dilated to %d) is larger than axis %d of the padded operand (%d); pad more or use padding \"SAME\"",
             name, w[i], eff, i, n)
      end
      out_shape[i] = math.floor((n - eff) / st[i]) + 1
    end
    -- one strided slice per window offset, folded with op
    local acc
    local offset = {}
    for i = 1, nd do offset[i] = 0 end
    while true do
      local starts, counts = {}, {}
      for i = 1, nd do starts[i], counts[i] = offset[i] * wd[i], out_shape[i] end
      local part = core.slice(xp, starts, st, counts)
      acc = acc and fn(acc, part) or part
      local i = nd
      while i >= 1 do
        offset[i] = offset[i] + 1
        if offset[i] < w[i] then break end
        offset[i] = 0
        i = i - 1
      end
      if i < 1 then break end
    end
    if nd == 0 then acc = xp end
    -- the init value joins every window once (as XLA's reduction starts from it); sum's 0 and
    -- max/min's infinities change nothing, so they are skipped
    if not (known and init == known.init(x)) then acc = fn(hl.fill_like(acc, init, acc.shape, acc.dtype), acc) end
    return acc
  end

  ---------------------------------------------------------------- top_k

  -- the k largest along the last axis, largest first, ties in index order; indices 1-based int64
  function L.top_k(x, k)
    if not core.usable(x, "lax.top_k") then fail("lax.top_k: expected an array, got %s", type(x)) end
    if x.ndim == 0 then fail("lax.top_k: a 0-d array has no last axis to choose from; reshape it to {1}") end
    local n = x.shape[x.ndim]
    if not is_int(k) or k < 0 or k > n then
      fail("lax.top_k: k must be an integer in 0..%d (the last axis of %s), got %s", n, util.type_str(x), tostring(k))
    end
    -- a stable ascending argsort of the reversed row, read backwards: descending, ties by index
    local p = hl.flip(hl.argsort(hl.flip(x, -1), -1), -1)
    local idx = (n + 1) - p
    if k < n then idx = slice_axis(idx, x.ndim - 1, 0, k, 1) end
    local vals = hl.take_along_axis(x, idx, -1)
    return vals, idx
  end

  ---------------------------------------------------------------- aliases

  for _, name in ipairs {"cond", "switch", "fori_loop", "while_loop", "scan", "checkpoint", "stop_gradient",
                         "dynamic_slice", "dynamic_update_slice"} do
    L[name] = hl[name]
  end
  L.remat = hl.checkpoint

  -- errors of the ops these call carry these functions' names
  L.top_k, L.reduce_window = shared.named("lax.top_k", L.top_k), shared.named("lax.reduce_window", L.reduce_window)
  L.cummax, L.cummin = shared.named("cummax", L.cummax), shared.named("cummin", L.cummin)

  hl.lax = L
  hl.associative_scan, hl.top_k, hl.reduce_window = L.associative_scan, L.top_k, L.reduce_window
  hl.cummax, hl.cummin = L.cummax, L.cummin
  shared.methods.cummax, shared.methods.cummin, shared.methods.top_k = L.cummax, L.cummin, L.top_k
end
