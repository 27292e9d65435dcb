-- hl.linalg's decompositions and what is composed of them: qr, svd, eigh, eigvalsh, slogdet, det
-- (primitives, their factors unpacked from one packed array: linalg_layout.lua); pinv, lstsq,
-- norm and matrix_power composed of them and of solve; solve_triangular (a primitive, LAPACK
-- trtrs). Semantics and
-- argument names are NumPy's (scipy's for solve_triangular); where NumPy takes keywords these
-- take positional arguments or an options table.
return function(hl, core, linalg, shared)
  local util = require "halua.util"
  local layout = require "halua.linalg_layout"
  local fail, operand = util.fail, shared.operand

  local shape_str = util.shape_str
  local function float_of(a) return (a.dtype == "float64" or a.dtype == "float32") and a.dtype or "float32" end
  local function as_float(a)
    local t = float_of(a)
    return a.dtype == t and a or hl.astype(a, t)
  end
  local mat = require("halua.matrix")(hl, core)
  local swap_last = mat.swap_last
  local function need_matrix(op, a, square)
    local s = a.shape
    if #s < 2 or (square and s[#s] ~= s[#s - 1]) then
      if square then fail("%s: a must be a square matrix or a stack of them ([..., n, n]), got shape %s", op, shape_str(s)) end
      fail("%s: a must be a matrix or a stack of them ([..., m, n]), got shape %s", op, shape_str(s))
    end
    return s[#s - 1], s[#s]
  end
  local function decomp(op, a, mode)
    local m, n = a.shape[a.ndim - 1], a.shape[a.ndim]
    return layout.unpack(core, op, mode, core.linalg_decomp(op, a, mode), m, n)
  end
  local masks = mat.triangle_masks
  local function eps(dtype) return dtype == "float64" and 2.220446049250313e-16 or 1.1920928955078125e-07 end

  local qr_modes = {reduced = 0, complete = 1, r = 2}
  function linalg.qr(a, mode)
    a = operand(a, "linalg.qr", 1)
    need_matrix("linalg.qr", a)
    local code = qr_modes[mode == nil and "reduced" or mode]
    if code == nil then fail("linalg.qr: mode must be \"reduced\", \"complete\" or \"r\", got %s", tostring(mode)) end
    local q, r = decomp("linalg.qr", a, code)
    if code == 2 then return r end
    return q, r
  end

  -- svd(a, full_matrices, compute_uv) or svd(a, {full_matrices =, compute_uv =})
  function linalg.svd(a, full_matrices, compute_uv)
    a = operand(a, "linalg.svd", 1)
    if type(full_matrices) == "table" then
      local o = util.options("linalg.svd", full_matrices, {"full_matrices", "compute_uv"}, "{full_matrices = false}")
      full_matrices, compute_uv = o.full_matrices, o.compute_uv
    end
    for _, v in ipairs({{"full_matrices", full_matrices}, {"compute_uv", compute_uv}}) do
      if v[2] ~= nil and type(v[2]) ~= "boolean" then fail("linalg.svd: %s must be true or false, got %s", v[1], tostring(v[2])) end
    end
    need_matrix("linalg.svd", a)
    if compute_uv == false then
      local _, s = decomp("linalg.svd", a, 2)
      return s
    end
    return decomp("linalg.svd", a, full_matrices == false and 0 or 1)
  end

  local function uplo_code(op, uplo)
    local u = uplo == nil and "L" or (type(uplo) == "string" and uplo:upper())
    if u ~= "L" and u ~= "U" then fail("%s: UPLO must be \"L\" or \"U\", got %s", op, tostring(uplo)) end
    return u == "U" and 1 or 0
  end
  function linalg.eigh(a, UPLO)
    a = operand(a, "linalg.eigh", 1)
    local code = uplo_code("linalg.eigh", UPLO)
    need_matrix("linalg.eigh", a, true)
    local w, v = decomp("linalg.eigh", a, code)
    return w, v
  end
  function linalg.eigvalsh(a, UPLO)
    a = operand(a, "linalg.eigvalsh", 1)
    local code = uplo_code("linalg.eigvalsh", UPLO)
    need_matrix("linalg.eigvalsh", a, true)
    return (decomp("linalg.eigh", a, code + 2))
  end

  local function slogdet(op, a)
    a = operand(a, op, 1)
    need_matrix(op, a, true)
    local p = decomp("linalg.slogdet", a, 0)   -- [..., 2]
    local parts = hl.split(p, 2, -1)
    return hl.squeeze(parts[1], -1), hl.squeeze(parts[2], -1)
  end
  function linalg.slogdet(a) return slogdet("linalg.slogdet", a) end
  -- the slogdet primitive in mode 1: det alone, whose derivative rule (rules.lua) is the cofactor
  -- matrix, which holds at singular matrices too (log|det|'s has none there)
  function linalg.det(a)
    a = operand(a, "linalg.det", 1)
    need_matrix("linalg.det", a, true)
    return hl.squeeze(decomp("linalg.slogdet", a, 1), -1)
  end

  -- NumPy's default cutoff: singular values at most rcond * the largest count as zero
  function linalg.pinv(a, rcond)
    a = as_float(operand(a, "linalg.pinv", 1))
    need_matrix("linalg.pinv", a)
    if rcond ~= nil and type(rcond) ~= "number" then fail("linalg.pinv: rcond must be a number, got %s", type(rcond)) end
    local u, s, vh = decomp("linalg.svd", a, 0)
    if s.shape[s.ndim] == 0 then return swap_last(hl.zeros_like(a)) end
    local cutoff = (rcond or 1e-15) * hl.max(s, -1, true)
    local large = hl.gt(s, cutoff)
    local sinv = hl.where(large, 1 / hl.where(large, s, 1), 0)
    return hl.matmul(swap_last(vh), hl.expand_dims(sinv, -1) * swap_last(u))
  end

  -- numpy.linalg.lstsq(a, b, rcond=None): x, the residuals' squared norms, a's rank and its
  -- singular values. The residuals are empty where NumPy's are (m <= n, or a rank below n; under
  -- hl.jit, where the rank is not known when tracing, only m <= n empties them).
  function linalg.lstsq(a, b, rcond)
    local op = "linalg.lstsq"
    a, b = operand(a, op, 1), operand(b, op, 2)
    if a.ndim ~= 2 then fail("%s: a must be a matrix ([m, n]), got shape %s", op, shape_str(a.shape)) end
    if b.ndim ~= 1 and b.ndim ~= 2 then fail("%s: b must be a vector [m] or a matrix [m, k], got shape %s", op, shape_str(b.shape)) end
    local m, n = a.shape[1], a.shape[2]
    if b.shape[1] ~= m then
      fail("%s: b of shape %s does not match a of shape %s (b needs [%d] or [%d, k])", op, shape_str(b.shape), shape_str(a.shape), m, m)
    end
    if rcond ~= nil and type(rcond) ~= "number" then fail("%s: rcond must be a number or nil, got %s", op, type(rcond)) end
    local dtype = (a.dtype == "float64" or b.dtype == "float64") and "float64" or "float32"
    a, b = a.dtype == dtype and a or hl.astype(a, dtype), b.dtype == dtype and b or hl.astype(b, dtype)
    local vec = b.ndim == 1
    local bm = vec and hl.reshape(b, {m, 1}) or b
    local u, s, vh = decomp("linalg.svd", a, 0)
    local k = math.min(m, n)
    local x, rank
    if k == 0 then
      x = hl.zeros({n, bm.shape[2]}, dtype)
      rank = hl.astype(hl.sum(hl.zeros({0}, "int32")), "int64")
    else
      local cutoff = (rcond or eps(dtype) * math.max(m, n)) * hl.max(s)
      local large = hl.gt(s, cutoff)
      local sinv = hl.where(large, 1 / hl.where(large, s, 1), 0)
      x = hl.matmul(swap_last(vh), hl.expand_dims(sinv, -1) * hl.matmul(swap_last(u), bm))
      rank = hl.sum(hl.astype(large, "int64"))
    end
    local resid
    local full = m > n and (core.is_tracer(rank) or rank:item() == n)
    if full then
      local r = bm - hl.matmul(a, x)
      resid = hl.sum(r * r, 1)
    else
      resid = hl.zeros({0}, dtype)
    end
    if vec then x = hl.reshape(x, {n}) end
    return x, resid, rank, s
  end

  -- numpy.linalg.norm(x, ord, axis, keepdims), or norm(x, {ord =, axis =, keepdims =})
  local inf = math.huge
  -- a 1-based axis of x
  local function norm_axis(op, ax, ndim) return util.norm_axis(op, ax, ndim) + 1 end
  local function vector_norm(op, x, ord, ax)
    if ord == nil or ord == 2 then return hl.sqrt(hl.sum(x * x, ax)) end
    if type(ord) ~= "number" then fail("%s: invalid norm order %s for vectors (use nil, 2, 1, inf, -inf, 0 or a number p)", op, tostring(ord)) end
    local ab = hl.abs(x)
    if ord == inf then return hl.max(ab, ax) end
    if ord == -inf then return hl.min(ab, ax) end
    if ord == 0 then return hl.astype(hl.sum(hl.astype(hl.ne(x, 0), "int32"), ax), x.dtype) end
    if ord == 1 then return hl.sum(ab, ax) end
    return hl.sum(ab ^ ord, ax) ^ (1 / ord)
  end
  local function matrix_norm(op, x, ord, r, c)
    if ord == nil or ord == "fro" then return hl.sqrt(hl.sum(x * x, {r, c})) end
    if ord == 1 or ord == -1 then
      local cols = hl.sum(hl.abs(x), r)          -- column sums; c moves left when r < c
      local cc = c > r and c - 1 or c
      return ord == 1 and hl.max(cols, cc) or hl.min(cols, cc)
    end
    if ord == inf or ord == -inf then
      local rows = hl.sum(hl.abs(x), c)
      local rr = r > c and r - 1 or r
      return ord == inf and hl.max(rows, rr) or hl.min(rows, rr)
    end
    if ord == 2 or ord == -2 or ord == "nuc" then
      local perm = {}
      for d = 1, x.ndim do
        if d ~= r and d ~= c then perm[#perm + 1] = d end
      end
      perm[#perm + 1], perm[#perm + 2] = r, c
      local _, s = decomp("linalg.svd", hl.transpose(x, perm), 2)
      if ord == 2 then return hl.max(s, -1) end
      if ord == -2 then return hl.min(s, -1) end
      return hl.sum(s, -1)
    end
    fail("%s: invalid norm order %s for matrices (use nil, \"fro\", \"nuc\", 1, -1, 2, -2, inf or -inf)", op, tostring(ord))
  end
  function linalg.norm(x, ord, axis, keepdims)
    local op = "linalg.norm"
    if type(ord) == "table" and axis == nil and keepdims == nil then
      local o = util.options(op, ord, {"ord", "axis", "keepdims"}, "{ord = 2, axis = 1}")
      ord, axis, keepdims = o.ord, o.axis, o.keepdims
    end
    x = as_float(operand(x, op, 1))
    if keepdims ~= nil and type(keepdims) ~= "boolean" then fail("%s: keepdims must be true or false, got %s", op, tostring(keepdims)) end
    local nd = x.ndim
    local axes
    if axis == nil then
      if ord == nil then
        local r = hl.sqrt(hl.sum(x * x))
        if keepdims then
          local s = {}
          for d = 1, nd do s[d] = 1 end
          r = hl.reshape(r, s)
        end
        return r
      end
      if nd == 1 then axes = {1}
      elseif nd == 2 then axes = {1, 2}
      else fail("%s: an order needs a 1-D or 2-D x, or an axis, got shape %s", op, shape_str(x.shape)) end
    elseif type(axis) == "number" then
      axes = {norm_axis(op, axis, nd)}
    elseif type(axis) == "table" and #axis == 2 then
      axes = {norm_axis(op, axis[1], nd), norm_axis(op, axis[2], nd)}
      if axes[1] == axes[2] then fail("%s: the two axes must differ, got %d and %d", op, axis[1], axis[2]) end
    else
      fail("%s: axis must be an integer or a table of two, got %s", op, tostring(axis))
    end
    local r = #axes == 1 and vector_norm(op, x, ord, axes[1]) or matrix_norm(op, x, ord, axes[1], axes[2])
    if keepdims then
      local s = {}
      for d = 1, nd do s[d] = x.shape[d] end
      for _, a in ipairs(axes) do s[a] = 1 end
      r = hl.reshape(r, s)
    end
    return r
  end

  -- a^n by repeated squaring; a negative n inverts a first (NumPy)
  function linalg.matrix_power(a, n)
    local op = "linalg.matrix_power"
    a = operand(a, op, 1)
    if type(n) ~= "number" or n % 1 ~= 0 then fail("%s: n must be an integer, got %s", op, tostring(n)) end
    local size = need_matrix(op, a, true)
    if n == 0 then
      local _, diag = masks(a, size)
      return hl.broadcast_to(hl.astype(diag, a.dtype), a.shape)
    end
    if n < 0 then
      a = shared.renamed(op, linalg.inv, a)
      n = -n
    end
    local result
    local p = a
    while n > 0 do
      if n % 2 == 1 then result = result and hl.matmul(result, p) or p end
      n = math.floor(n / 2)
      if n > 0 then p = hl.matmul(p, p) end
    end
    return result
  end

  -- scipy.linalg.solve_triangular(a, b, trans, lower, unit_diagonal) as an options table: a
  -- primitive (LAPACK trtrs) reading only a's triangle (lower or upper), its diagonal taken as
  -- ones where unit_diagonal
  local trans_codes = {[0] = 0, [1] = 1, [2] = 1, N = 0, T = 1, C = 1}
  function linalg.solve_triangular(a, b, opts)
    local op = "linalg.solve_triangular"
    a, b = operand(a, op, 1), operand(b, op, 2)
    local o = util.options(op, opts, {"lower", "trans", "unit_diagonal"}, "{lower = true}")
    for _, k in ipairs({"lower", "unit_diagonal"}) do
      if o[k] ~= nil and type(o[k]) ~= "boolean" then fail("%s: %s must be true or false, got %s", op, k, tostring(o[k])) end
    end
    local t = trans_codes[o.trans == nil and 0 or o.trans]
    if t == nil then fail("%s: trans must be 0, 1, 2, \"N\", \"T\" or \"C\", got %s", op, tostring(o.trans)) end
    return core.linalg_solve_triangular(a, b, (o.lower and 1 or 0) + 2 * t + (o.unit_diagonal and 4 or 0))
  end
end
