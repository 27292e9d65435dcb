-- Helpers on the last two axes that the linear-algebra functions and their derivative rules
-- share: the transpose of a stack of matrices, and masks of a square matrix's triangles.
--   local mat = require("halua.matrix")(hl, core)
return function(hl, core)
  local M = {}

  -- x with its last two axes swapped ([..., m, n] -> [..., n, m])
  function M.swap_last(x)
    local perm = {}
    for i = 1, x.ndim do perm[i] = i end
    perm[x.ndim - 1], perm[x.ndim] = x.ndim, x.ndim - 1
    return hl.transpose(x, perm)
  end

  -- masks of the strictly lower triangle, the diagonal and the strictly upper triangle of n x n
  -- matrices, where `like` lives: values of its trace under jit (a host constant there would meet
  -- the tangents and cotangents that are concrete arrays, captured by the jitted function, on
  -- their device: a jvp with a GPU tangent mixed devices), else arrays on its device
  function M.triangle_masks(like, n)
    local r, c = core.iota("int32", {n, n}, 0, like), core.iota("int32", {n, n}, 1, like)
    if not core.is_tracer(like) and core.device_of(like) ~= core.device_of(r) then
      r, c = core.to_device(r, core.device_of(like)), core.to_device(c, core.device_of(like))
    end
    return hl.gt(r, c), hl.eq(r, c), hl.lt(r, c)
  end

  return M
end
