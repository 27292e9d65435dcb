-- Indexing with index arrays: x:at(...) updates whose key holds integer arrays (one scatter
-- primitive, any combine mode), the segment reductions (segment_sum/max/min) and dynamic slices
-- with traced starts (dynamic_slice, dynamic_update_slice). All are ordinary ops over the
-- primitives, so they trace into pipelines, differentiate and batch like any other.
-- shared: init.lua's helpers {as_array, axis_spec}.
return function(hl, core, shared)
  local util = require "halua.util"
  local fail, shape_str, type_str = util.fail, util.shape_str, util.type_str
  local is_array, as_array, axis_spec = core.is_array, shared.as_array, shared.axis_spec

  local int_dtypes = {int8 = true, int32 = true, int64 = true, uint8 = true}

  -- the scatter primitive combines complex values part by part, right for set and add only: the
  -- other modes on complex arrays are composed (complex_scatter.lua)
  local complex_scatter = require("halua.complex_scatter")(hl, core)
  local function scatter(x, v, idx, axis, mode)
    if (x.dtype == "complex64" or x.dtype == "complex128") and mode ~= "set" and mode ~= "add" then
      return complex_scatter(x, v, idx, axis, mode)
    end
    return core.scatter(x, v, idx, axis, mode)
  end

  -- NumPy's broadcast of two shapes, or nil
  local function broadcast(a, b)
    local n, out = math.max(#a, #b), {}
    for i = 1, n do
      local x, y = a[#a - n + i] or 1, b[#b - n + i] or 1
      if x ~= y and x ~= 1 and y ~= 1 then return nil end
      out[i] = x == 1 and y or x
    end
    return out
  end

  -- an index array's 0-based positions along an axis of extent n, as int32 (int64 for int64
  -- indices): negatives count from the end; 0 and anything past either end lands outside 0..n-1,
  -- which the scatter drops
  local function zero_based(op, idx, n, axis)
    if not int_dtypes[idx.dtype] then
      fail("%s: index arrays must have an integer dtype (int8, int32, int64, uint8), got %s for axis %d%s", op,
           type_str(idx), axis, idx.dtype == "bool" and "; for a boolean mask use hl.where(mask, new, x)" or
           "; convert with idx:astype(\"int32\") if the values are whole")
    end
    if idx.dtype ~= "int64" then idx = idx:astype("int32") end
    return hl.where(hl.lt(idx, 0), idx + n, idx - 1)
  end

  ---------------------------------------------------------------- x:at(arrays):op(v)

  -- Per NumPy (and JAX): the index arrays (and the plain numbers beside them) broadcast to one
  -- shape B; the selection's shape is B in place of the indexed axes when they are adjacent, else
  -- B first, then the ranged axes. The indexed axes are flattened into one axis addressed by a
  -- linear index (-1 where any part is out of range), the ranged axes sliced, and one scatter
  -- combines the updates in.
  local function at_arrays(x, key, v, mode)
    local op = "at(...):" .. mode
    local shape, nd = x.shape, x.ndim
    local specs = is_array(key) and {key} or key
    if #specs > nd then fail("%s: %d indices for shape %s", op, #specs, shape_str(shape)) end
    if x.dtype == "bool" and (mode == "add" or mode == "mul") then
      fail("%s: cannot %s bool values; use set, min (logical and) or max (logical or), or convert x first", op, mode)
    end
    local adv, idxs, rest, ranged = {}, {}, {}, {}
    local B = {}
    for d = 1, nd do
      local s = specs[d] or {}
      if is_array(s) then
        adv[#adv + 1], idxs[#idxs + 1] = d, zero_based(op, s, shape[d], d)
        local b = broadcast(B, s.shape)
        if not b then
          fail("%s: index arrays of shapes %s and %s do not broadcast together", op, shape_str(B), shape_str(s.shape))
        end
        B = b
      elseif type(s) == "number" then
        local i = axis_spec(s, shape[d], d, shape)
        adv[#adv + 1], idxs[#idxs + 1] = d, i
      else
        local start, step, count = axis_spec(s, shape[d], d, shape)
        if count == 0 then start = 0 end
        rest[#rest + 1] = {axis = d, start = start, step = step, count = count}
        ranged[d] = rest[#rest]
      end
    end
    local adjacent = adv[#adv] - adv[1] + 1 == #adv
    -- the selection's shape, and where B sits in it
    local sel, at_b = {}, 1
    for _, r in ipairs(rest) do
      if adjacent and r.axis < adv[1] then at_b = at_b + 1 end
    end
    for i, r in ipairs(rest) do sel[i < at_b and i or i + #B] = r.count end
    for k, e in ipairs(B) do sel[at_b + k - 1] = e end
    -- the updates: x's dtype (as JAX casts them), broadcast to the selection
    if type(v) == "number" or type(v) == "boolean" then
      v = hl.fill_like(x, v, sel, x.dtype)
    elseif is_array(v) then
      local b = broadcast(v.shape, sel)
      if not b or #b ~= #sel or shape_str(b) ~= shape_str(sel) then
        fail("%s: the update value of shape %s does not broadcast to the selection's shape %s", op, shape_str(v.shape),
             shape_str(sel))
      end
      v = hl.broadcast_to(v.dtype == x.dtype and v or v:astype(x.dtype), sel)
    else
      fail("%s: the update value must be a number, boolean or array, got %s", op, type(v))
    end
    -- x in a frame where the indexed axes are one block at the selection's B: x itself when they
    -- are adjacent (the common case: no transposes, and no reshape for one array), else those
    -- axes moved to the front. The updates are then already laid out as the scatter wants them
    -- (the axes before the block, B, the axes after it).
    local perm, first = {}, adjacent and adv[1] or 1
    if adjacent then
      for d = 1, nd do perm[d] = d end
    else
      for _, d in ipairs(adv) do perm[#perm + 1] = d end
      for _, r in ipairs(rest) do perm[#perm + 1] = r.axis end
    end
    local xt = adjacent and x or hl.transpose(x, perm)
    -- the indexed positions as one linear index over the block, -1 where any part is outside
    local rows, lin, valid = 1, nil, nil
    for k = #adv, 1, -1 do
      local n, i = shape[adv[k]], idxs[k]
      if type(i) == "number" then
        if i ~= 0 then lin = lin and lin + i * rows or i * rows end
      else
        if #adv > 1 then
          local ok = hl.logical_and(hl.ge(i, 0), hl.lt(i, n))
          valid = valid and hl.logical_and(valid, ok) or ok
        end
        lin = lin and lin + i * rows or (rows == 1 and i or i * rows)
      end
      rows = rows * n
    end
    if rows >= 2 ^ 31 and lin.dtype ~= "int64" then fail("%s: %d indexed positions need int64 index arrays", op, rows) end
    -- (one array alone needs no test: the scatter drops what falls outside its axis)
    if #adv > 1 then lin = hl.where(valid, lin, -1) end
    lin = hl.broadcast_to(lin, B)
    -- the ranged axes sliced (when they select less than the whole axis); the block merged
    local starts, steps, counts, flat, whole = {}, {}, {}, {}, true
    for k, d in ipairs(perm) do
      local r = ranged[d]
      starts[k], steps[k], counts[k] = r and r.start or 0, r and r.step or 1, r and r.count or shape[d]
      whole = whole and counts[k] == shape[d] and starts[k] == 0 and steps[k] == 1
      if k < first or k >= first + #adv then flat[#flat + 1] = counts[k] elseif k == first then flat[#flat + 1] = rows end
    end
    local sub = whole and xt or core.slice(xt, starts, steps, counts)
    local merged = #adv > 1
    local res = scatter(merged and core.reshape(sub, flat) or sub, v, lin, first - 1, mode)
    if merged then res = core.reshape(res, counts) end
    if not whole then
      local placed = hl.rules.unslice(res, xt.shape, starts, steps)
      local mask = hl.rules.unslice(hl.fill_like(x, true, counts, "bool"), xt.shape, starts, steps)
      res = hl.where(mask, placed, xt)
    end
    if adjacent then return res end
    local inv = {}
    for k, d in ipairs(perm) do inv[d] = k end
    return hl.transpose(res, inv)
  end

  -- whether an at() key holds an index array (then at_arrays serves it)
  local function has_array(key)
    if is_array(key) then return true end
    if type(key) ~= "table" then return false end
    for _, s in ipairs(key) do if is_array(s) then return true end end
    return false
  end

  ---------------------------------------------------------------- segment reductions

  -- the dtype's lowest and highest values (JAX's identities of max and min)
  local function extreme(dtype, x, shape, highest)
    if dtype == "bool" then return hl.fill_like(x, highest, shape, "bool") end
    if dtype == "uint8" then return hl.fill_like(x, highest and 255 or 0, shape, dtype) end
    local lo = ({int8 = -128, int32 = -2 ^ 31, int64 = -2 ^ 63})[dtype]
    if not lo then return hl.fill_like(x, highest and math.huge or -math.huge, shape, dtype) end
    local low = hl.fill_like(x, lo, shape, dtype)
    return highest and -(low + 1) or low   -- 2^63 - 1 has no double
  end

  local function segment(name, mode)
    local op = "segment_" .. name
    return function(data, ids, num_segments)
      data = as_array(data, op)
      if not is_array(ids) then ids = hl.asarray(ids, "int32") end
      if data.ndim == 0 then fail("%s: data is a scalar; segments run along its first axis", op) end
      if ids.ndim ~= 1 or ids.shape[1] ~= data.shape[1] then
        fail("%s: segment_ids %s must be 1-d with one id per row of data %s", op, type_str(ids), type_str(data))
      end
      if not int_dtypes[ids.dtype] then
        fail("%s: segment_ids must have an integer dtype, got %s", op, ids.dtype)
      end
      if num_segments == nil then
        if core.is_tracer(ids) then
          fail("%s: num_segments is required under jit (the result's shape cannot depend on traced ids)", op)
        end
        num_segments = ids.size > 0 and math.max(hl.max(ids):item(), 0) or 0
      end
      if type(num_segments) ~= "number" or num_segments < 0 or num_segments ~= math.floor(num_segments) then
        fail("%s: num_segments must be a non-negative integer, got %s", op, tostring(num_segments))
      end
      if data.dtype == "bool" and mode == "add" then data = data:astype("int32") end
      local shape = data.shape
      shape[1] = num_segments
      local base = mode == "add" and hl.fill_like(data, 0, shape, data.dtype) or extreme(data.dtype, data, shape, mode == "min")
      -- 1-based ids; anything outside 1..num_segments (0 and negatives included) is dropped
      local i = ids.dtype == "int64" and ids or ids:astype("int32")
      return scatter(base, data, hl.where(hl.ge(i, 1), i - 1, -1), 0, mode)
    end
  end
  hl.segment_sum = segment("sum", "add")
  hl.segment_max = segment("max", "max")
  hl.segment_min = segment("min", "min")
  hl.ops = hl.ops or {}
  hl.ops.segment_sum, hl.ops.segment_max, hl.ops.segment_min = hl.segment_sum, hl.segment_max, hl.segment_min

  ---------------------------------------------------------------- dynamic slices

  -- starts: a table of numbers or 0-d integer arrays, or a 1-d integer array; 1-based, negative
  -- from the end. Each becomes a 0-based start clamped into 0..extent - size, as jax.lax clamps.
  local function clamped_starts(op, x, starts, sizes)
    local list = {}
    if is_array(starts) then
      if starts.ndim ~= 1 or starts.shape[1] ~= x.ndim then
        fail("%s: starts %s must hold one start per axis of x %s", op, type_str(starts), type_str(x))
      end
      for d = 1, x.ndim do list[d] = starts[d] end
    elseif type(starts) == "table" then
      if #starts ~= x.ndim then fail("%s: %d starts for x of shape %s (one per axis)", op, #starts, shape_str(x.shape)) end
      for d = 1, x.ndim do list[d] = starts[d] end
    else
      fail("%s: starts must be a table or a 1-d integer array, got %s", op, type(starts))
    end
    local out = {}
    for d = 1, x.ndim do
      local s, n, size = list[d], x.shape[d], sizes[d]
      if type(s) == "number" then
        if s ~= math.floor(s) then fail("%s: start %s of axis %d is not an integer", op, tostring(s), d) end
        s = s < 0 and n + s or s - 1
        out[d] = math.max(0, math.min(s, n - size))
      elseif is_array(s) then
        if not int_dtypes[s.dtype] or s.ndim ~= 0 then
          fail("%s: start of axis %d must be an integer scalar, got %s", op, d, type_str(s))
        end
        s = s.dtype == "int64" and s or s:astype("int32")
        s = hl.where(hl.lt(s, 0), s + n, s - 1)
        out[d] = hl.clip(s, 0, n - size)
      else
        fail("%s: start of axis %d must be a number or an integer array, got %s", op, d, type(s))
      end
    end
    return out
  end

  local function check_sizes(op, x, sizes)
    if type(sizes) ~= "table" or #sizes ~= x.ndim then
      fail("%s: sizes must be a table of %d static integers (one per axis of %s)", op, x.ndim, shape_str(x.shape))
    end
    for d = 1, x.ndim do
      local s = sizes[d]
      if type(s) ~= "number" or s ~= math.floor(s) or s < 0 or s > x.shape[d] then
        fail("%s: size %s of axis %d must be an integer in 0..%d", op, tostring(s), d, x.shape[d])
      end
    end
  end

  -- a number start is a static slice; an array start reads its window through one gather
  local function window(v, d, start, size)
    if type(start) == "number" then return util.slice_axis(core, v, d - 1, start, size) end
    return core.gather(v, hl.arange(size, start.dtype) + start, d - 1)
  end

  function hl.dynamic_slice(x, starts, sizes)
    x = as_array(x, "dynamic_slice")
    check_sizes("dynamic_slice", x, sizes)
    local s = clamped_starts("dynamic_slice", x, starts, sizes)
    for d = 1, x.ndim do
      if not (s[d] == 0 and sizes[d] == x.shape[d]) then x = window(x, d, s[d], sizes[d]) end
    end
    return x
  end

  -- the update placed by the transpose of dynamic_slice (per axis: where a position falls in
  -- the window, the update's element there), chosen over x by a mask of the window
  function hl.dynamic_update_slice(x, update, starts)
    x = as_array(x, "dynamic_update_slice")
    update = as_array(update, "dynamic_update_slice")
    if update.ndim ~= x.ndim then
      fail("dynamic_update_slice: update %s must have x's rank (x is %s)", type_str(update), type_str(x))
    end
    local sizes = update.shape
    for d = 1, x.ndim do
      if sizes[d] > x.shape[d] then
        fail("dynamic_update_slice: update %s is larger than x %s along axis %d", type_str(update), type_str(x), d)
      end
    end
    local s = clamped_starts("dynamic_update_slice", x, starts, sizes)
    if update.dtype ~= x.dtype then update = update:astype(x.dtype) end
    local placed, mask = update, nil
    for d = 1, x.ndim do
      local n, start, size = x.shape[d], s[d], sizes[d]
      local pos = hl.arange(n, is_array(start) and start.dtype or "int32")
      local rel = pos - start              -- the window's position of each of x's, outside 0..size-1 off it
      placed = core.gather(placed, rel, d - 1)   -- out of range reads 0
      local inside = hl.logical_and(hl.ge(rel, 0), hl.lt(rel, size))
      local shp = {}
      for k = 1, x.ndim do shp[k] = k == d and n or 1 end
      inside = hl.reshape(inside, shp)
      mask = mask and hl.logical_and(mask, inside) or inside
    end
    if x.ndim == 0 then return update end
    return hl.where(mask, placed, x)
  end

  return {at_arrays = at_arrays, has_array = has_array}
end
