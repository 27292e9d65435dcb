-- hl.linalg: solve, inv, cholesky, qr, svd, eigh, eigvalsh, det, slogdet, lstsq, norm, pinv,
-- matrix_power, solve_triangular (NumPy's numpy.linalg semantics, batched over leading axes).
-- solve, solve_triangular, cholesky and the decompositions (qr, svd, eigh, slogdet) are
-- primitives (engine/host/hl_linalg*.c: LAPACK on the host, an extern stage inside jit pipelines;
-- a decomposition's factors come packed in one array, linalg_layout.lua); the rest are composed
-- of them (linalg_decomp.lua), so their derivatives are those of what they are made of. inv is
-- solve against the identity, so its derivative is solve's.
-- A singular (or, for cholesky, not positive definite) matrix is an error when the op runs
-- eagerly, and gives NaN for that matrix of the batch inside hl.jit, where a pipeline cannot
-- stop part way (JAX gives NaN too).
return function(hl, core, shared)
  local util = require "halua.util"
  local fail = util.fail
  local linalg = {}

  local function operand(x, op, argn) return shared.as_array(x, op, argn) end

  -- errors of the primitive under another op's name
  local function renamed(op, f, ...)
    local ok, r = pcall(f, ...)
    if ok then return r end
    error((tostring(r):gsub("^halua: linalg%.[%w_]+: ", "halua: " .. op .. ": ", 1)), 0)
  end

  function linalg.solve(a, b)
    return core.linalg_solve(operand(a, "linalg.solve", 1), operand(b, "linalg.solve", 2))
  end

  function linalg.cholesky(a)
    return core.linalg_cholesky(operand(a, "linalg.cholesky", 1))
  end

  function linalg.inv(a)
    a = operand(a, "linalg.inv", 1)
    local s = a.shape
    local n = s[#s]
    if #s < 2 or s[#s - 1] ~= n then
      fail("linalg.inv: a must be a square matrix or a stack of them ([..., n, n]), got shape [%s]", table.concat(s, ","))
    end
    local dtype = (a.dtype == "float64" or a.dtype == "float32") and a.dtype or "float32"
    -- the identity broadcast over a's batch: a constant of a's trace when a is traced
    local eye = hl.eq(core.iota("int32", {n, n}, 0), core.iota("int32", {n, n}, 1)):astype(dtype)
    return renamed("linalg.inv", core.linalg_solve, a, hl.broadcast_to(util.where_is(core, eye, a), s))
  end

  require("halua.linalg_decomp")(hl, core, linalg, {operand = operand, renamed = renamed})
  hl.linalg = linalg
end
