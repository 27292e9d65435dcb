-- The scatter primitive's mul, min and max modes on complex arrays (x:at(idx):mul/min/max(v)
-- with index arrays, np.multiply.at / np.minimum.at / np.maximum.at). The primitive combines
-- each part alone, which is right for set and add only; these modes are composed instead:
-- the updates are sorted by target (a stable sort, so repeated targets keep their order), each
-- run of equal targets is reduced by a segmented scan in log2(count) steps of the complex
-- operation (hl.maximum / hl.minimum already order complex numbers as NumPy does, a NaN winning
-- over the others and the earlier NaN over a later one), and the last element of each run, its
-- reduction, is combined with x once. Every step is an ordinary op, so the composition traces,
-- differentiates and batches. A product of a run is taken as a tree, not NumPy's left fold: the
-- same value up to rounding.
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
    local order = core.sort(i, 0, true)
    local s = core.gather(i, order, 0)
    local u = core.gather(core.reshape(v, {rows, nb, cols}), order, 1)
    -- Hillis-Steele: after the step of shift d each element holds the reduction of the up to 2d
    -- elements of its run ending at it (runs are contiguous, so equal targets d apart mean the
    -- whole span is one run); the earlier operand goes first, as in NumPy's sequential order
    local d = 1
    while d < nb do
      local s_prev = hl.concatenate({hl.fill_like(s, -2, {d}, s.dtype), util.slice_axis(core, s, 0, 0, nb - d)}, 1)
      local u_prev = hl.concatenate({util.slice_axis(core, u, 1, 0, d), util.slice_axis(core, u, 1, 0, nb - d)}, 2)
      u = hl.where(core.reshape(hl.eq(s_prev, s), {1, nb, 1}), f(u_prev, u), u)
      d = d * 2
    end
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
