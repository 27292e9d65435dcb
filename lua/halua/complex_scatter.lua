-- The scatter primitive's mul, min and max modes on complex arrays (x:at(idx):mul/min/max(v)
-- with index arrays, np.multiply.at / np.minimum.at / np.maximum.at, segment_max/min). The
-- primitive combines each part alone, which is right for set and add only; these modes are
-- composed of ordinary ops instead, so they trace, differentiate and batch:
--  - min and max in O(count) with the real scatter (extreme below);
--  - mul: the updates sorted by target (a stable sort, so repeats keep their order), each run of
--    equal targets reduced by a segmented scan of complex products in log2(count) steps, and
--    each run's last element, its product, multiplied into x once. A run's product is taken as
--    a tree, not NumPy's left fold: the same value up to rounding.
-- Returns scatter(x, v, idx, axis, mode) with core.scatter's arguments (idx 0-based, anything
-- outside 0..n-1 dropped; v's shape is x's with axis replaced by idx's shape).
return function(hl, core)
  local util = require "halua.util"

  local combine = {
    mul = function(a, b) return a * b end,
    max = function(a, b) return hl.maximum(a, b) end,
    min = function(a, b) return hl.minimum(a, b) end,
  }

  local function product(t, from, to)
    local p = 1
    for k = from, to do p = p * t[k] end
    return p
  end

  local function isnan(z) return hl.logical_or(hl.isnan(hl.real(z)), hl.isnan(hl.imag(z))) end

  -- max and min in O(count) with the real scatter: the extreme real part per target, then the
  -- extreme imaginary part among the elements that reach it; a NaN (either part) wins over
  -- everything, the first one met in NumPy's order (x, then the updates in index order) found
  -- by a min-scatter of the NaN updates' positions. x3 is [rows, n, cols], u [rows, nb, cols].
  local function extreme(x3, u, i, n, nb, is_max)
    local mode, low = is_max and "max" or "min", is_max and -math.huge or math.huge
    local xr, xi, ur, ui = hl.real(x3), hl.imag(x3), hl.real(u), hl.imag(u)
    local xbad, ubad = isnan(x3), isnan(u)
    local xr1, ur1 = hl.where(xbad, low, xr), hl.where(ubad, low, ur)
    local re = core.scatter(xr1, ur1, i, 1, mode)
    local at_target = core.gather(re, hl.clip(i, 0, n - 1), 1)
    local ucand = hl.logical_and(hl.eq(ur1, at_target), hl.logical_not(ubad))
    local xcand = hl.logical_and(hl.eq(xr1, re), hl.logical_not(xbad))
    local im = core.scatter(hl.where(xcand, xi, low), hl.where(ucand, ui, low), i, 1, mode)
    local pos = hl.broadcast_to(hl.reshape(hl.arange(nb, "int32"), {1, nb, 1}), ubad.shape)
    local first = core.scatter(hl.fill_like(xr, nb, nil, "int32"), hl.where(ubad, pos, nb), i, 1, "min")
    local nan_u = hl.take_along_axis(u, hl.minimum(first, nb - 1) + 1, 2)
    return hl.where(xbad, x3, hl.where(hl.lt(first, nb), nan_u, hl.complex(re, im)))
  end

  return function(x, v, idx, axis, mode)
    local f = combine[mode]
    if not f then util.fail("scatter: no complex composition for mode %s", tostring(mode)) end
    local shape, ishape = x.shape, idx.shape
    local n, nb = shape[axis + 1], product(ishape, 1, #ishape)
    if nb == 0 or x.size == 0 then return x end
    local rows, cols = product(shape, 1, axis), product(shape, axis + 2, #shape)
    -- one flat list of targets (-1 for every one that is dropped, so they form one run)
    local i = core.reshape(idx, {nb})
    i = hl.where(hl.logical_and(hl.ge(i, 0), hl.lt(i, n)), i, -1)
    if mode ~= "mul" then
      local r = extreme(core.reshape(x, {rows, n, cols}), core.reshape(v, {rows, nb, cols}), i, n, nb, mode == "max")
      return core.reshape(r, shape)
    end
    local order = core.sort(i, 0, true)
    local s = core.gather(i, order, 0)
    local u = core.gather(core.reshape(v, {rows, nb, cols}), order, 1)
    -- Hillis-Steele: after the step of shift d each element holds the reduction of the up to 2d
    -- elements of its run ending at it (runs are contiguous, so equal targets d apart mean the
    -- whole span is one run); the earlier operand goes first, as in NumPy's sequential order
    local d = 1
    -- (on the parts as real arrays: the composed complex product's views would be repeated at
    -- every step)
    local ur, ui = hl.real(u), hl.imag(u)
    local function sl(a, from, count) return util.slice_axis(core, a, 1, from, count) end
    while d < nb do
      -- elements d.. against those d before them (the first d elements have none: kept)
      local same = core.reshape(hl.eq(util.slice_axis(core, s, 0, 0, nb - d), util.slice_axis(core, s, 0, d, nb - d)), {1, nb - d, 1})
      local hr, hi, tr, ti = sl(ur, 0, nb - d), sl(ui, 0, nb - d), sl(ur, d, nb - d), sl(ui, d, nb - d)
      local pr, pi = hr * tr - hi * ti, hr * ti + hi * tr
      ur = hl.concatenate({sl(ur, 0, d), hl.where(same, pr, tr)}, 2)
      ui = hl.concatenate({sl(ui, 0, d), hl.where(same, pi, ti)}, 2)
      d = d * 2
    end
    u = hl.complex(ur, ui)
    -- each run's last element carries its reduction: only those are placed (distinct targets)
    local s_next = hl.concatenate({util.slice_axis(core, s, 0, 1, nb - 1), hl.fill_like(s, -2, {1}, s.dtype)}, 1)
    local tgt = hl.where(hl.ne(s, s_next), s, -1)
    local ushape = {}
    for k = 1, axis do ushape[k] = shape[k] end
    ushape[axis + 1] = nb
    for k = axis + 2, #shape do ushape[k] = shape[k] end
    local t = core.scatter(x, core.reshape(u, ushape), tgt, axis, "set")
    local hit = core.scatter(hl.fill_like(x, false, {n}, "bool"), hl.fill_like(x, true, {nb}, "bool"), tgt, 0, "set")
    local hshape = {}
    for k = 1, #shape do hshape[k] = k == axis + 1 and n or 1 end
    -- untouched elements stay x exactly (x * 1 would turn an infinite part's 0 partner into NaN)
    return hl.where(core.reshape(hit, hshape), f(x, t), x)
  end
end
