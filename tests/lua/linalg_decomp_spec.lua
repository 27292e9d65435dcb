-- hl.linalg's decompositions (qr, svd, eigh, eigvalsh, slogdet, det) and what is built on them
-- (pinv, lstsq, norm, matrix_power, solve_triangular): values against numpy.linalg where they
-- are unique, identities where they are not (q r = a, u diag(s) vh = a, a v = v diag(w), with
-- orthonormal factors), under jit and vmap, derivatives against central differences, errors.
local hl = require "halua"
local np = require "support.numpy"
local suite = require "support.suite"
local diff_check = require "support.diff_check"

local F64 = "float64"
local tol = {float32 = {rtol = 2e-4, atol = 2e-5}, float64 = {rtol = 1e-10, atol = 1e-11}}
local function dims(s) return "[" .. table.concat(s, ",") .. "]" end
local function swap(x)
  local p = {}
  for i = 1, x.ndim do p[i] = i end
  p[x.ndim - 1], p[x.ndim] = x.ndim, x.ndim - 1
  return hl.transpose(x, p)
end
-- symmetric matrices (float64 made, then cast), with well-separated eigenvalues
local function sym(shape, dtype)
  local m = np.rand(shape, -1, 1, F64)
  return ((m + swap(m)) * 0.5 + hl.eye(shape[#shape], F64) * 0):astype(dtype or F64)
end
local function wellcond(shape, dtype)
  local n = shape[#shape]
  return np.rand(shape, -1, 1, dtype or F64) + hl.eye(n, dtype or F64) * n
end
local function max_abs(x) return hl.max(hl.abs(x)):item() end
-- the identity broadcast like the [..., k, k] x
local function eye_like(x) return hl.broadcast_to(hl.eye(x.shape[x.ndim], x.dtype), x.shape) end
local function diagm(v) return hl.expand_dims(v, -2) * eye_like(hl.matmul(hl.expand_dims(v, -1), hl.expand_dims(v, -2))) end
local eps = {float32 = 1e-4, float64 = 1e-11}

suite("singular values, eigenvalues and determinants against numpy.linalg", function(case)
  math.randomseed(51)
  for _, dtype in ipairs {"float32", "float64"} do
    for _, sp in ipairs {{3, 3}, {5, 3}, {3, 5}, {4, 2, 3}, {2, 3, 6, 4}, {1, 1}, {0, 3}, {3, 0}, {40, 25}, {64, 8, 8}} do
      local a = np.rand(sp, -1, 1, dtype)
      case(string.format("%s svd %s: singular values", dtype, dims(sp)), function() return hl.linalg.svd(a, false, false) end,
           "np.linalg.svd(a, compute_uv=False)", {a}, tol[dtype])
      case(string.format("%s svd %s: s of the full decomposition", dtype, dims(sp)), function() return select(2, hl.linalg.svd(a)) end,
           "np.linalg.svd(a, compute_uv=False)", {a}, tol[dtype])
    end
    for _, sp in ipairs {{3, 3}, {4, 4}, {2, 5, 5}, {1, 1}, {0, 0}, {3, 2, 6, 6}, {30, 30}} do
      local s = sym(sp, dtype)
      case(string.format("%s eigvalsh %s", dtype, dims(sp)), function() return hl.linalg.eigvalsh(s) end, "np.linalg.eigvalsh(a)", {s}, tol[dtype])
      case(string.format("%s eigh %s: eigenvalues", dtype, dims(sp)), function() return (hl.linalg.eigh(s)) end,
           "np.linalg.eigh(a)[0]", {s}, tol[dtype])
      local a = np.rand(sp, -2, 2, dtype)
      case(string.format("%s eigvalsh %s of a non-symmetric matrix reads its lower triangle", dtype, dims(sp)),
           function() return hl.linalg.eigvalsh(a) end, "np.linalg.eigvalsh(a)", {a}, tol[dtype])
      case(string.format("%s eigvalsh %s, UPLO = \"U\"", dtype, dims(sp)), function() return hl.linalg.eigvalsh(a, "U") end,
           "np.linalg.eigvalsh(a, UPLO='U')", {a}, tol[dtype])
      case(string.format("%s slogdet %s: sign", dtype, dims(sp)), function() return (hl.linalg.slogdet(a)) end,
           "np.linalg.slogdet(a)[0]", {a}, tol[dtype])
      case(string.format("%s slogdet %s: log|det|", dtype, dims(sp)), function() return select(2, hl.linalg.slogdet(a)) end,
           "np.linalg.slogdet(a)[1]", {a}, tol[dtype])
      case(string.format("%s det %s", dtype, dims(sp)), function() return hl.linalg.det(a) end, "np.linalg.det(a)", {a}, tol[dtype])
    end
  end
  local ai = np.rand({3, 3}, -5, 5, "int32")
  case("int32 det is float32", function() return hl.linalg.det(ai) end, "np.linalg.det(a).astype(np.float32)", {ai}, {dtype = "float32", rtol = 1e-4, atol = 1e-4})
  case("int32 singular values are float32", function() return hl.linalg.svd(ai, {compute_uv = false}) end,
       "np.linalg.svd(a, compute_uv=False).astype(np.float32)", {ai}, {dtype = "float32", rtol = 1e-5, atol = 1e-5})
  local sing = hl.array({{1, 2}, {2, 4}}, F64)
  case("a singular matrix: det 0", function() return hl.linalg.det(sing) end, "np.linalg.det(a)", {sing}, tol.float64)
  case("a singular matrix: slogdet's sign 0", function() return (hl.linalg.slogdet(sing)) end, "np.linalg.slogdet(a)[0]", {sing}, tol.float64)
  case("a singular matrix: slogdet's log|det| -inf", function() return select(2, hl.linalg.slogdet(sing)) end, "np.linalg.slogdet(a)[1]", {sing}, tol.float64)
  local big = wellcond({3, 50, 50})
  case("slogdet of [3,50,50] (det beyond float range is not needed)", function() return select(2, hl.linalg.slogdet(big * 10)) end,
       "np.linalg.slogdet(a * 10)[1]", {big}, tol.float64)
  -- batches large enough to spread over the engine's threads
  local many, msym = np.rand({64, 16, 12}, -1, 1, F64), sym({64, 16, 16})
  case("svd of [64,16,12] (batch items on several threads)", function() return hl.linalg.svd(many, false, false) end,
       "np.linalg.svd(a, compute_uv=False)", {many}, tol.float64)
  case("eigvalsh of [64,16,16] (batch items on several threads)", function() return hl.linalg.eigvalsh(msym) end,
       "np.linalg.eigvalsh(a)", {msym}, tol.float64)
  case("slogdet of [64,16,16] (batch items on several threads)", function() return select(2, hl.linalg.slogdet(msym)) end,
       "np.linalg.slogdet(a)[1]", {msym}, tol.float64)
  case("qr's r of [64,16,12], up to the signs of its rows", function() local _, r = hl.linalg.qr(many); return hl.abs(r) end,
       "np.abs(np.linalg.qr(a)[1])", {many}, tol.float64)
  local one = sym({5, 5})
  case("eigvalsh of a broadcast_to batch (stride 0)", function() return hl.linalg.eigvalsh(hl.broadcast_to(one, {3, 5, 5})) end,
       "np.linalg.eigvalsh(np.broadcast_to(a, (3, 5, 5)))", {one}, tol.float64)
  local t = np.rand({6, 5}, -1, 1, F64)
  case("svd of a transposed view", function() return hl.linalg.svd(t.T, false, false) end, "np.linalg.svd(a.T, compute_uv=False)", {t}, tol.float64)
end)

suite("pinv, lstsq, norm, matrix_power, solve_triangular against NumPy", function(case)
  math.randomseed(52)
  for _, dtype in ipairs {"float32", "float64"} do
    for _, sp in ipairs {{3, 3}, {5, 3}, {3, 5}, {2, 4, 3}, {1, 4}} do
      local a = np.rand(sp, -1, 1, dtype)
      case(string.format("%s pinv %s", dtype, dims(sp)), function() return hl.linalg.pinv(a) end, "np.linalg.pinv(a)", {a},
           dtype == "float32" and {rtol = 2e-3, atol = 2e-4} or tol.float64)
    end
    -- lstsq: over- and underdetermined, 1-D and 2-D b, rank deficient
    local cases = {{{6, 3}, {6}}, {{6, 3}, {6, 2}}, {{3, 5}, {3}}, {{4, 4}, {4, 3}}}
    for _, c in ipairs(cases) do
      local a, b = np.rand(c[1], -1, 1, dtype), np.rand(c[2], -1, 1, dtype)
      local lt = dtype == "float32" and {rtol = 2e-3, atol = 2e-4} or tol.float64
      for k, what in ipairs {"x", "residuals", "rank", "s"} do
        case(string.format("%s lstsq a %s, b %s: %s", dtype, dims(c[1]), dims(c[2]), what),
             function() return select(k, hl.linalg.lstsq(a, b)) end,
             string.format("np.linalg.lstsq(a, b, rcond=None)[%d]", k - 1), {a, b}, k == 3 and {dtype = false} or lt)
      end
    end
    local x = np.rand({3, 4, 5}, -2, 2, dtype)
    local v = np.rand({7}, -2, 2, dtype)
    local m = np.rand({4, 5}, -2, 2, dtype)
    local inf = math.huge
    local nt = dtype == "float32" and {rtol = 1e-5, atol = 1e-5} or tol.float64
    for _, ord in ipairs {"nil", 2, 1, inf, -inf, 0, 3, 0.5, -1} do
      local o = ord
      if ord == "nil" then o = nil end
      local p = ord == "nil" and "None" or ord == inf and "np.inf" or ord == -inf and "-np.inf" or tostring(ord)
      case(string.format("%s norm of a vector, ord %s", dtype, tostring(ord)), function() return hl.linalg.norm(v, o) end,
           string.format("np.linalg.norm(a, %s)", p), {v}, nt)
      case(string.format("%s norm along axis 2 of [3,4,5], ord %s", dtype, tostring(ord)), function() return hl.linalg.norm(x, o, 2) end,
           string.format("np.linalg.norm(a, %s, axis=1)", p), {x}, nt)
      case(string.format("%s norm along axis -1, keepdims, ord %s", dtype, tostring(ord)), function() return hl.linalg.norm(x, {ord = o, axis = -1, keepdims = true}) end,
           string.format("np.linalg.norm(a, %s, axis=-1, keepdims=True)", p), {x}, nt)
    end
    for _, ord in ipairs {"nil", "fro", "nuc", 1, -1, 2, -2, inf, -inf} do
      local o = ord
      if ord == "nil" then o = nil end
      local p = ord == "nil" and "None" or ord == inf and "np.inf" or ord == -inf and "-np.inf" or type(ord) == "string" and "'" .. ord .. "'" or tostring(ord)
      case(string.format("%s matrix norm, ord %s", dtype, tostring(ord)), function() return hl.linalg.norm(m, o) end,
           string.format("np.linalg.norm(a, %s)", p), {m}, nt)
      case(string.format("%s matrix norm over axes {3, 1} of [3,4,5], ord %s", dtype, tostring(ord)), function() return hl.linalg.norm(x, o, {3, 1}) end,
           string.format("np.linalg.norm(a, %s, axis=(2, 0))", p), {x}, nt)
      case(string.format("%s matrix norm over axes {1, 2}, keepdims, ord %s", dtype, tostring(ord)), function() return hl.linalg.norm(x, o, {1, 2}, true) end,
           string.format("np.linalg.norm(a, %s, axis=(0, 1), keepdims=True)", p), {x}, nt)
    end
    case(dtype .. " norm of [3,4,5] (all elements)", function() return hl.linalg.norm(x) end, "np.linalg.norm(a)", {x}, nt)
    case(dtype .. " norm of [3,4,5], keepdims", function() return hl.linalg.norm(x, nil, nil, true) end, "np.linalg.norm(a, keepdims=True)", {x}, nt)
    local w = wellcond({2, 4, 4}, dtype) * 0.25
    for _, n in ipairs {0, 1, 2, 3, 5, 8, -1, -3} do
      case(string.format("%s matrix_power of [2,4,4], n = %d", dtype, n), function() return hl.linalg.matrix_power(w, n) end,
           string.format("np.linalg.matrix_power(a, %d)", n), {w}, dtype == "float32" and {rtol = 1e-3, atol = 1e-4} or tol.float64)
    end
    local tri, rhs, rv = wellcond({3, 5, 5}, dtype), np.rand({3, 5, 2}, -1, 1, dtype), np.rand({5}, -1, 1, dtype)
    local st = dtype == "float32" and {rtol = 1e-4, atol = 1e-5} or tol.float64
    case(dtype .. " solve_triangular lower", function() return hl.linalg.solve_triangular(tri, rhs, {lower = true}) end,
         "np.linalg.solve(np.tril(a), b)", {tri, rhs}, st)
    case(dtype .. " solve_triangular upper (the default)", function() return hl.linalg.solve_triangular(tri, rhs) end,
         "np.linalg.solve(np.triu(a), b)", {tri, rhs}, st)
    case(dtype .. " solve_triangular lower, trans \"T\"", function() return hl.linalg.solve_triangular(tri, rhs, {lower = true, trans = "T"}) end,
         "np.linalg.solve(np.swapaxes(np.tril(a), -1, -2), b)", {tri, rhs}, st)
    case(dtype .. " solve_triangular upper, trans 1, unit diagonal", function() return hl.linalg.solve_triangular(tri, rhs, {trans = 1, unit_diagonal = true}) end,
         "np.linalg.solve(np.swapaxes(np.triu(a, 1) + np.eye(5, dtype=a.dtype), -1, -2), b)", {tri, rhs}, st)
    case(dtype .. " solve_triangular with a 1-D b", function() return hl.linalg.solve_triangular(tri[1], rv, {lower = true}) end,
         "np.linalg.solve(np.tril(a[0]), b)", {tri, rv}, st)
  end
  local mi = hl.array({{1, 1}, {1, 0}}, "int32")
  case("matrix_power of an int32 matrix stays int32 (Fibonacci)", function() return hl.linalg.matrix_power(mi, 10) end,
       "np.linalg.matrix_power(a, 10)", {mi}, {dtype = "int32"})
  local rd = hl.array({{1, 2}, {2, 4}, {3, 6}}, F64)
  case("lstsq of a rank-deficient matrix: rank 1", function() return select(3, hl.linalg.lstsq(rd, hl.array({1, 2, 2}, F64))) end,
       "np.linalg.lstsq(a, np.array([1., 2., 2.]), rcond=None)[2]", {rd}, {dtype = false})
  case("lstsq of a rank-deficient matrix: the minimum-norm x", function() return (hl.linalg.lstsq(rd, hl.array({1, 2, 2}, F64))) end,
       "np.linalg.lstsq(a, np.array([1., 2., 2.]), rcond=None)[0]", {rd}, tol.float64)
  case("lstsq of a rank-deficient matrix: no residuals", function() return select(2, hl.linalg.lstsq(rd, hl.array({1, 2, 2}, F64))) end,
       "np.linalg.lstsq(a, np.array([1., 2., 2.]), rcond=None)[1]", {rd}, tol.float64)
  case("pinv of a rank-deficient matrix", function() return hl.linalg.pinv(rd) end, "np.linalg.pinv(a)", {rd}, tol.float64)
  case("pinv with rcond 0.5 cuts the small singular value", function() return hl.linalg.pinv(hl.array({{1, 0}, {0, 0.1}}, F64), 0.5) end,
       "np.linalg.pinv(np.array([[1., 0.], [0., 0.1]]), rcond=0.5)", {}, tol.float64)
end)

-- the decompositions by their defining identities, eagerly and under jit
describe("decompositions satisfy their identities", function()
  math.randomseed(53)
  local function check(cond, what) assert.is_true(cond, what) end
  for _, dtype in ipairs {"float32", "float64"} do
    local e = eps[dtype]
    for _, sp in ipairs {{4, 4}, {6, 3}, {3, 6}, {2, 5, 3}, {3, 2, 3, 4}, {1, 1}, {60, 40}} do
      local a = np.rand(sp, -1, 1, dtype)
      local m, n = sp[#sp - 1], sp[#sp]
      local k = math.min(m, n)
      for _, jit in ipairs {false, true} do
        local wrap = jit and hl.jit or function(f) return f end
        local tag = string.format("%s %s%s", dtype, dims(sp), jit and " under jit" or "")
        it("qr " .. tag, function()
          for _, mode in ipairs {"reduced", "complete"} do
            local q, r = wrap(function(x) return hl.linalg.qr(x, mode) end)(a)
            local kq = mode == "complete" and m or k
            assert.are.same(q.shape[#sp], kq)
            assert.are.same(r.shape[#sp - 1], kq)
            assert.are.same(q.dtype, dtype)
            check(max_abs(hl.matmul(q, r) - a) < e * 10 * n, mode .. ": q r = a")
            check(max_abs(hl.matmul(swap(q), q) - eye_like(hl.matmul(swap(q), q))) < e * 10 * m, mode .. ": q orthonormal")
            local low = hl.gt(hl.reshape(hl.arange(r.shape[#sp - 1]), {r.shape[#sp - 1], 1}), hl.reshape(hl.arange(n), {1, n}))
            check(max_abs(hl.where(low, r, 0)) == 0, mode .. ": r upper triangular")
          end
          local r = wrap(function(x) return hl.linalg.qr(x, "r") end)(a)
          local _, r2 = hl.linalg.qr(a)
          check(max_abs(r - r2) == 0, "mode r: the reduced r")
        end)
        it("svd " .. tag, function()
          for _, full in ipairs {false, true} do
            local u, s, vh = wrap(function(x) return hl.linalg.svd(x, full) end)(a)
            assert.are.same(u.shape[#sp], full and m or k)
            assert.are.same(vh.shape[#sp - 1], full and n or k)
            local uk = full and hl.split(u, {k + 1}, -1)[1] or u
            local vk = full and hl.split(vh, {k + 1}, -2)[1] or vh
            check(max_abs(hl.matmul(uk * hl.expand_dims(s, -2), vk) - a) < e * 10 * n, "u diag(s) vh = a")
            local uu, vv = hl.matmul(swap(u), u), hl.matmul(vh, swap(vh))
            check(max_abs(uu - eye_like(uu)) < e * 10 * m, "u orthonormal")
            check(max_abs(vv - eye_like(vv)) < e * 10 * n, "vh orthonormal")
            check(hl.all(hl.ge(s, 0)):item() and (k < 2 or hl.all(hl.ge(hl.split(s, {k}, -1)[1], hl.split(s, {2}, -1)[2])):item()), "s descending, non-negative")
          end
        end)
      end
    end
    for _, sp in ipairs {{4, 4}, {2, 5, 5}, {1, 1}, {40, 40}} do
      local a = sym(sp, dtype)
      it(string.format("eigh %s %s: a v = v diag(w), v orthonormal, eagerly and under jit", dtype, dims(sp)), function()
        for _, jit in ipairs {false, true} do
          local f = function(x) return hl.linalg.eigh(x) end
          local w, v = (jit and hl.jit(f) or f)(a)
          check(max_abs(hl.matmul(a, v) - v * hl.expand_dims(w, -2)) < e * 10 * sp[#sp], "a v = v w")
          local vv = hl.matmul(swap(v), v)
          check(max_abs(vv - eye_like(vv)) < e * 10 * sp[#sp], "v orthonormal")
        end
      end)
    end
  end
  it("eigh reads one triangle: UPLO \"L\" (the default) or \"U\"", function()
    local s = sym({4, 4})
    local junk = np.rand({4, 4}, -5, 5, F64)
    local low = hl.gt(hl.reshape(hl.arange(4), {4, 1}), hl.reshape(hl.arange(4), {1, 4}))
    local w = hl.linalg.eigh(s)
    local wl = hl.linalg.eigh(hl.where(swap(low), junk, s))
    local wu = hl.linalg.eigh(hl.where(low, junk, s), "u")
    assert.is_true(max_abs(w - wl) < 1e-12 and max_abs(w - wu) < 1e-12)
  end)
  it("jit: only s of an svd, only w of an eigh, a block of q (the packed result in part)", function()
    local a = np.rand({3, 5, 4}, -1, 1, F64)
    local s = hl.jit(function(x) local _, sv = hl.linalg.svd(x, false); return sv[{2}] * 2 end)(a)
    assert.is_true(max_abs(s - select(2, hl.linalg.svd(a, false))[{2}] * 2) == 0)
    local q = hl.jit(function(x) return (hl.linalg.qr(x))[{{2, 3}, {2, 4}, {2}}] end)(a)
    assert.is_true(max_abs(q - (hl.linalg.qr(a))[{{2, 3}, {2, 4}, {2}}]) == 0)
    local b = sym({3, 4, 4})
    local w = hl.jit(function(x) return (hl.linalg.eigh(x))[{{1, 2}}] + 1 end)(b)
    assert.is_true(max_abs(w - ((hl.linalg.eigh(b))[{{1, 2}}] + 1)) == 0)
  end)
  it("empty matrices: NumPy's shapes", function()
    local q, r = hl.linalg.qr(hl.zeros({3, 0}, F64), "complete")
    assert.are.same({3, 3}, q.shape)
    assert.are.same({3, 0}, r.shape)
    assert.is_true(max_abs(q - hl.eye(3, F64)) == 0)
    local u, s, vh = hl.linalg.svd(hl.zeros({2, 0}))
    assert.are.same({{2, 2}, {0}, {0, 0}}, {u.shape, s.shape, vh.shape})
    local w, v = hl.linalg.eigh(hl.zeros({2, 0, 0}))
    assert.are.same({{2, 0}, {2, 0, 0}}, {w.shape, v.shape})
    assert.are.same(1, hl.linalg.det(hl.zeros({0, 0})):item())
  end)
end)

-- derivatives against central differences (float64), eagerly and under jit; functions of the
-- factors that do not depend on their signs (squares, products), on inputs with distinct
-- singular values and eigenvalues
describe("linalg decomposition derivatives", function()
  local flat, numeric, close = diff_check.flat, diff_check.numeric, diff_check.close
  math.randomseed(54)
  local function wsum(x, w) return (x * w):sum() end
  local cases = {}
  for _, sp in ipairs {{4, 3}, {3, 4}, {3, 3}, {2, 4, 3}} do
    local a = np.rand(sp, -1, 1, F64)
    local m, n = sp[#sp - 1], sp[#sp]
    local k = math.min(m, n)
    local bs = {}
    for i = 1, #sp - 2 do bs[i] = sp[i] end
    local function sh(...) local s = {unpack(bs)}; for _, e in ipairs({...}) do s[#s + 1] = e end; return s end
    local W1, W2, W3 = np.rand(sh(m, k), -1, 1, F64), np.rand(sh(k), -1, 1, F64), np.rand(sh(k, n), -1, 1, F64)
    cases[#cases + 1] = {"svd " .. dims(sp) .. ": u^2, s, vh^2", function(x)
      local u, s, vh = hl.linalg.svd(x, false)
      return wsum(u * u, W1) + wsum(s, W2) + wsum(vh * vh, W3)
    end, a}
    cases[#cases + 1] = {"svd " .. dims(sp) .. ": u diag(s) vh reproduces a", function(x)
      local u, s, vh = hl.linalg.svd(x, false)
      return (hl.matmul(u * hl.expand_dims(s, -2), vh) ^ 2):sum()
    end, a}
    cases[#cases + 1] = {"singular values only " .. dims(sp), function(x) return wsum(hl.linalg.svd(x, false, false), W2) end, a}
    cases[#cases + 1] = {"norm 2, nuc and -2 " .. dims(sp), function(x)
      return hl.linalg.norm(x, 2, {-2, -1}):sum() + hl.linalg.norm(x, "nuc", {-2, -1}):sum() + hl.linalg.norm(x, -2, {-2, -1}):sum()
    end, a}
    local WP = np.rand(sh(n, m), -1, 1, F64)
    cases[#cases + 1] = {"pinv " .. dims(sp), function(x) return wsum(hl.linalg.pinv(x), WP) end, a}
    if m >= n then
      local Q, R = np.rand(sh(m, n), -1, 1, F64), np.rand(sh(n, n), -1, 1, F64)
      cases[#cases + 1] = {"qr " .. dims(sp), function(x) local q, r = hl.linalg.qr(x); return wsum(q, Q) + wsum(r, R) end, a}
      cases[#cases + 1] = {"qr mode r " .. dims(sp), function(x) return wsum(hl.linalg.qr(x, "r"), R) end, a}
    end
  end
  local S = np.rand({2, 4, 4}, -1, 1, F64)
  local WV, WW = np.rand({2, 4, 4}, -1, 1, F64), np.rand({2, 4}, -1, 1, F64)
  cases[#cases + 1] = {"eigh: v^2 and w (the lower triangle read)", function(x)
    local w, v = hl.linalg.eigh(x)
    return wsum(v * v, WV) + wsum(w, WW)
  end, S}
  cases[#cases + 1] = {"eigh UPLO U", function(x)
    local w, v = hl.linalg.eigh(x, "U")
    return wsum(v * v, WV) + wsum(w * w, WW)
  end, S}
  cases[#cases + 1] = {"eigvalsh", function(x) return wsum(hl.linalg.eigvalsh(x), WW) end, S}
  local G = wellcond({2, 3, 3})
  cases[#cases + 1] = {"slogdet", function(x) return select(2, hl.linalg.slogdet(x)):sum() end, G}
  cases[#cases + 1] = {"det", function(x) return (hl.linalg.det(x) * hl.array({1, -2}, F64)):sum() end, G}
  local B = np.rand({2, 3, 2}, -1, 1, F64)
  cases[#cases + 1] = {"solve_triangular by a", function(x) return (hl.linalg.solve_triangular(x, B, {lower = true}) ^ 2):sum() end, G}
  cases[#cases + 1] = {"solve_triangular by b", function(b) return (hl.linalg.solve_triangular(G, b, {trans = "T"}) ^ 2):sum() end, B}
  cases[#cases + 1] = {"matrix_power -2", function(x) return (hl.linalg.matrix_power(x, -2) ^ 2):sum() end, G}
  local L = np.rand({5, 3}, -1, 1, F64)
  local y = np.rand({5}, -1, 1, F64)
  cases[#cases + 1] = {"lstsq by a (x and residuals)", function(x)
    local sol, res = hl.linalg.lstsq(x, y)
    return (sol ^ 2):sum() + res:sum()
  end, L}
  cases[#cases + 1] = {"norm of a vector, ord 3, and fro", function(x) return hl.linalg.norm(x, 3, 2):sum() + hl.linalg.norm(x, "fro", {1, 2}) end, L}
  for _, c in ipairs(cases) do
    local name, f, x = c[1], c[2], c[3]
    it(name .. ": grad against central differences, eager and jit", function()
      local want = numeric(f, x)
      close(hl.grad(f)(x), want, 1e-6, "eager")
      close(hl.jit(hl.grad(f))(x), want, 1e-6, "jit")
    end)
  end
  it("second derivatives (the rules are written with differentiable ops): grad of grad against central differences", function()
    local a, s, g = np.rand({4, 3}, -1, 1, F64), sym({3, 3}), wellcond({3, 3})
    local W = np.rand({4, 3}, -1, 1, F64)
    local W3 = np.rand({3, 3}, -1, 1, F64)
    local fs = {
      {"svd", function(x) return (hl.linalg.svd(x, false, false) ^ 3):sum() end, a, W},
      {"eigh", function(x) local w, v = hl.linalg.eigh(x); return (w * w):sum() + (v * v * W3):sum() end, s, W3},
      {"qr", function(x) local q, r = hl.linalg.qr(x); return (q * W):sum() + (r * r):sum() end, a, W},
      {"slogdet", function(x) return select(2, hl.linalg.slogdet(x)) end, g, W3},
    }
    for _, c in ipairs(fs) do
      local name, f, x, w = c[1], c[2], c[3], c[4]
      local h = function(y) return (hl.grad(f)(y) * w):sum() end
      close(hl.grad(h)(x), numeric(h, x, 1e-5), 1e-5, name)
    end
  end)
  it("jvp of svd, eigh, qr and slogdet against central differences", function()
    local e = 1e-6
    local a, t = np.rand({2, 4, 3}, -1, 1, F64), np.rand({2, 4, 3}, -1, 1, F64)
    local s, ts = sym({2, 3, 3}), np.rand({2, 3, 3}, -1, 1, F64)
    local g, tg = wellcond({3, 3}), np.rand({3, 3}, -1, 1, F64)
    local fs = {
      {function(x) local u, sv, vh = hl.linalg.svd(x, false); return hl.concatenate({hl.reshape(u * u, {-1}), hl.reshape(sv, {-1}), hl.reshape(vh * vh, {-1})}, 1) end, a, t},
      {function(x) local w, v = hl.linalg.eigh(x); return hl.concatenate({hl.reshape(w, {-1}), hl.reshape(v * v, {-1})}, 1) end, s, ts},
      {function(x) local q, r = hl.linalg.qr(x); return hl.concatenate({hl.reshape(q, {-1}), hl.reshape(r, {-1})}, 1) end, a, t},
      {function(x) return select(2, hl.linalg.slogdet(x)) end, g, tg},
    }
    for i, c in ipairs(fs) do
      local f, x, tx = c[1], c[2], c[3]
      for _, jit in ipairs {false, true} do
        local wrap = jit and hl.jit or function(h) return h end
        local _, got = wrap(function(p, q) return hl.jvp(f, {p}, {q}) end)(x, tx)
        local want = (f(x + e * tx) - f(x - e * tx)) / (2 * e)
        close(got, flat(want), 1e-6, "jvp " .. i .. (jit and " jit" or ""))
      end
    end
  end)
end)

describe("solve_triangular (LAPACK trtrs)", function()
  math.randomseed(56)
  local function close_to(got, want, t) assert.is_true(max_abs(got - want) <= t, "differs by " .. max_abs(got - want)) end
  local a, b = wellcond({3, 5, 5}), np.rand({3, 5, 2}, -1, 1, F64)
  local low = hl.gt(hl.reshape(hl.arange(5), {5, 1}), hl.reshape(hl.arange(5), {1, 5}))
  local diag = hl.eq(hl.reshape(hl.arange(5), {5, 1}), hl.reshape(hl.arange(5), {1, 5}))
  it("reads only its triangle; unit_diagonal ignores the diagonal; the same under jit and for a block", function()
    for _, lower in ipairs {true, false} do
      for _, unit in ipairs {false, true} do
        for _, trans in ipairs {"N", "T"} do
          local keep = lower and low or swap(low)
          local t = hl.where(keep, a, hl.where(diag, unit and 1 or a, 0))
          if trans == "T" then t = swap(t) end
          local want = hl.linalg.solve(t, b)
          local junk = hl.where(keep, a, hl.where(diag, unit and 0 or a, 1e3))   -- the other triangle (and a unit diagonal) unread
          local opts = {lower = lower, unit_diagonal = unit, trans = trans}
          close_to(hl.linalg.solve_triangular(junk, b, opts), want, 1e-12)
          close_to(hl.jit(function(p, q) return hl.linalg.solve_triangular(p, q, opts) end)(junk, b), want, 1e-12)
          close_to(hl.jit(function(p, q) return hl.linalg.solve_triangular(p, q, opts)[{{2, 3}, {2, 4}, {2}}] end)(junk, b),
                   want[{{2, 3}, {2, 4}, {2}}], 1e-12)
        end
      end
    end
  end)
  it("a zero on the diagonal: an eager error naming the batch item, NaN for that item inside jit", function()
    local z = a:at({2, 3, 3}):set(0)
    local ok, err = pcall(hl.linalg.solve_triangular, z, b, {lower = true})
    assert.is_false(ok)
    assert.is_truthy(err:find("^halua: linalg%.solve_triangular: singular matrix: a zero on the diagonal at batch index %[2%] of a float64%[3,5,5%]"), err)
    local x = hl.jit(function(p, q) return hl.linalg.solve_triangular(p, q, {lower = true}) end)(z, b)
    local v = x:totable()
    assert.is_true(v[2][1][1] ~= v[2][1][1] and v[1][1][1] == v[1][1][1] and v[3][5][2] == v[3][5][2])
    -- a unit diagonal is not read: no error
    close_to(hl.linalg.solve_triangular(z, b, {lower = true, unit_diagonal = true}),
             hl.linalg.solve_triangular(a, b, {lower = true, unit_diagonal = true}), 0)
  end)
  it("jvp against central differences, eager and jit", function()
    local e = 1e-6
    local ta, tb = np.rand({3, 5, 5}, -1, 1, F64), np.rand({3, 5, 2}, -1, 1, F64)
    for _, opts in ipairs {{lower = true}, {trans = "T"}, {lower = true, trans = 1, unit_diagonal = true}} do
      local f = function(p, q) return hl.linalg.solve_triangular(p, q, opts) end
      for _, jit in ipairs {false, true} do
        local wrap = jit and hl.jit or function(h) return h end
        local _, got = wrap(function(p, q) return hl.jvp(f, {p, q}, {ta, tb}) end)(a, b)
        local want = (f(a + e * ta, b + e * tb) - f(a - e * ta, b - e * tb)) / (2 * e)
        diff_check.close(got, diff_check.flat(want), 1e-6, "jvp")
      end
    end
  end)
end)

describe("linalg decompositions under vmap", function()
  math.randomseed(55)
  local function same(got, want, t)
    assert.are.same(want.shape, got.shape)
    assert.is_true(max_abs(got - want) <= t, "differs by " .. max_abs(got - want))
  end
  local a, s = np.rand({4, 5, 3}, -1, 1, F64), sym({4, 3, 3})
  it("each maps over a leading axis like its batched form", function()
    local u, sv, vh = hl.vmap(function(x) return hl.linalg.svd(x, false) end)(a)
    local u2, sv2, vh2 = hl.linalg.svd(a, false)
    same(u, u2, 1e-14); same(sv, sv2, 1e-14); same(vh, vh2, 1e-14)
    local q, r = hl.vmap(hl.linalg.qr)(a)
    local q2, r2 = hl.linalg.qr(a)
    same(q, q2, 1e-14); same(r, r2, 1e-14)
    local w, v = hl.vmap(hl.linalg.eigh)(s)
    local w2, v2 = hl.linalg.eigh(s)
    same(w, w2, 1e-14); same(v, v2, 1e-14)
    same(hl.vmap(hl.linalg.det)(s), hl.linalg.det(s), 1e-14)
    same(hl.jit(hl.vmap(hl.linalg.pinv))(a), hl.linalg.pinv(a), 1e-13)
    same(hl.vmap(function(x) return hl.linalg.norm(x, 2) end)(a), hl.linalg.norm(a, 2, {2, 3}), 1e-13)
    same(hl.vmap(function(x) return hl.linalg.matrix_power(x, 3) end)(s), hl.linalg.matrix_power(s, 3), 1e-13)
    same(hl.vmap(hl.linalg.solve_triangular, {1, false})(s, s[1]), hl.linalg.solve_triangular(s, hl.broadcast_to(s[1], {4, 3, 3})), 1e-12)
    local x = hl.vmap(function(m) return (hl.linalg.lstsq(m, hl.ones({5}, F64))) end)(a)
    same(x[2], (hl.linalg.lstsq(a[2], hl.ones({5}, F64))), 1e-13)
  end)
  it("grad of vmap of svd", function()
    local f = function(m) return (hl.vmap(function(x) return hl.linalg.svd(x, false, false) end)(m) ^ 2):sum() end
    local g = function(m) return (hl.linalg.svd(m, false, false) ^ 2):sum() end
    same(hl.grad(f)(a), hl.grad(g)(a), 1e-12)
  end)
end)

describe("linalg decomposition errors", function()
  local function fails(pattern, f, ...)
    local ok, err = pcall(f, ...)
    assert.is_false(ok, "expected an error matching " .. pattern)
    assert.is_truthy(tostring(err):find(pattern), "error was: " .. tostring(err))
  end
  local nan = hl.array({{1, 0 / 0}, {0, 1}}, F64)
  it("NaN: svd does not converge (eager error naming the batch item), NaN under jit; the others give NaN", function()
    fails("^halua: linalg%.svd: SVD did not converge %(a is float64%[2,2%]", hl.linalg.svd, nan)
    fails("^halua: linalg%.svd: SVD did not converge at batch index %[2%] of a float64%[2,2,2%]", hl.linalg.svd, hl.stack({hl.eye(2, F64), nan}))
    fails("^halua: linalg%.svd: SVD did not converge", hl.linalg.norm, nan, 2)
    local s = hl.jit(function(x) return hl.linalg.svd(x, false, false) end)(hl.stack({hl.eye(2, F64), nan})):totable()
    assert.is_true(s[1][1] == 1 and s[2][1] ~= s[2][1])
    local w = hl.linalg.eigvalsh(nan):totable()
    assert.is_true(w[1] ~= w[1])
    local d = hl.linalg.det(nan):item()
    assert.is_true(d ~= d)
    local q = hl.linalg.qr(nan):totable()
    assert.is_true(q[1][1] ~= q[1][1])
  end)
  it("wrong shapes and arguments name the function and what to do", function()
    fails("^halua: linalg%.eigh: a must be a square matrix or a stack of them %(%[%.%.%., n, n%]%), got shape %[2,3%]", hl.linalg.eigh, hl.ones({2, 3}))
    fails("^halua: linalg%.det: a must be a square matrix.*got shape %[3%]", hl.linalg.det, hl.ones({3}))
    fails("^halua: linalg%.slogdet: a must be a square", hl.linalg.slogdet, hl.ones({2, 3}))
    fails("^halua: linalg%.svd: a must be a matrix or a stack of them %(%[%.%.%., m, n%]%), got shape %[4%]", hl.linalg.svd, hl.ones({4}))
    fails("^halua: linalg%.qr: mode must be \"reduced\", \"complete\" or \"r\", got raw", hl.linalg.qr, hl.ones({2, 2}), "raw")
    fails("^halua: linalg%.svd: unknown option 'hermitian' %(the options are full_matrices, compute_uv%)", hl.linalg.svd, hl.ones({2, 2}), {hermitian = true})
    fails("^halua: linalg%.svd: full_matrices must be true or false, got 1", hl.linalg.svd, hl.ones({2, 2}), 1)
    fails("^halua: linalg%.eigh: UPLO must be \"L\" or \"U\", got X", hl.linalg.eigh, hl.eye(2), "X")
    fails("^halua: linalg%.norm: invalid norm order fro for vectors", hl.linalg.norm, hl.ones({3}), "fro")
    fails("^halua: linalg%.norm: invalid norm order 3 for matrices", hl.linalg.norm, hl.ones({3, 3}), 3)
    fails("^halua: linalg%.norm: an order needs a 1%-D or 2%-D x, or an axis, got shape %[2,2,2%]", hl.linalg.norm, hl.ones({2, 2, 2}), 2)
    fails("^halua: linalg%.norm: axis 3 is out of range for 2 dimensions", hl.linalg.norm, hl.ones({2, 2}), nil, 3)
    fails("^halua: linalg%.norm: unknown option 'axes'", hl.linalg.norm, hl.ones({2, 2}), {axes = 1})
    fails("^halua: linalg%.matrix_power: n must be an integer, got 1%.5", hl.linalg.matrix_power, hl.eye(2), 1.5)
    fails("^halua: linalg%.matrix_power: a must be a square matrix", hl.linalg.matrix_power, hl.ones({2, 3}), 2)
    fails("^halua: linalg%.matrix_power: singular matrix", hl.linalg.matrix_power, hl.zeros({2, 2}), -1)
    fails("^halua: linalg%.solve_triangular: singular matrix", hl.linalg.solve_triangular, hl.zeros({2, 2}), hl.ones({2}))
    fails("^halua: linalg%.solve_triangular: unknown option 'side'", hl.linalg.solve_triangular, hl.eye(2), hl.ones({2}), {side = "left"})
    fails("^halua: linalg%.solve_triangular: trans must be 0, 1, 2, \"N\", \"T\" or \"C\", got X", hl.linalg.solve_triangular, hl.eye(2), hl.ones({2}), {trans = "X"})
    fails("^halua: linalg%.solve_triangular: b of shape %[3%] does not match a of shape %[2,2%]", hl.linalg.solve_triangular, hl.eye(2), hl.ones({3}))
    fails("^halua: linalg%.lstsq: a must be a matrix %(%[m, n%]%), got shape %[2,2,2%]", hl.linalg.lstsq, hl.ones({2, 2, 2}), hl.ones({2}))
    fails("^halua: linalg%.lstsq: b of shape %[3%] does not match a of shape %[2,2%]", hl.linalg.lstsq, hl.ones({2, 2}), hl.ones({3}))
    fails("^halua: linalg%.pinv: argument 1 is a string, expected an array", hl.linalg.pinv, "a")
  end)
  it("derivatives JAX does not define are errors saying what to pass", function()
    fails("^halua: linalg%.qr: no derivative for a 2x3 matrix", hl.grad(function(x) return (hl.linalg.qr(x)):sum() end), hl.ones({2, 3}, F64))
    fails("^halua: linalg%.svd: no derivative of the full u and vh of a 3x2 matrix.*pass full_matrices = false",
          hl.grad(function(x) return (hl.linalg.svd(x)):sum() end), hl.array({{1, 2}, {3, 4}, {5, 7}}, F64))
  end)
  it("in a cuda pipeline the decompositions are host stages", function()
    local f = hl.jit(function(p) return hl.linalg.svd(p, false, false) end, {device = "cuda"})
    assert.truthy(f:lower(hl.eye(3)):stmt():find("hl_stage_linalg_decomp", 1, true))
  end)
end)

describe("forward mode through singular values alone", function()
  -- svd(a, {compute_uv = false}) packs only the values: its tangent rule once packed them as
  -- the wrong factor and failed; jvp, jacfwd and the 2 / nuc norms go through it
  local c = hl.array({{1, 2, 0.5}, {3, -4, 1.5}}, "float64")
  local dc = hl.array({{0.3, -0.1, 0.2}, {0.05, 0.4, -0.25}}, "float64")
  local function f(x) return hl.sum(hl.linalg.svd(x, {compute_uv = false})) end
  it("jvp of the sum of the singular values equals its central difference", function()
    local _, t = hl.jvp(f, {c}, {dc})
    local h = 1e-6
    local fd = (f(c + dc * h):item() - f(c - dc * h):item()) / (2 * h)
    assert(math.abs(t:item() - fd) < 1e-7, t:item() .. " vs " .. fd)
  end)
  it("jacfwd of norm(x, 2) and norm(x, 'nuc') equal jacrev", function()
    for _, ord in ipairs({2, "nuc", -2}) do
      local g = function(x) return hl.linalg.norm(x, ord) end
      local fwd, rev = hl.jacfwd(g)(c), hl.jacrev(g)(c)
      assert(hl.max(hl.abs(fwd - rev)):item() < 1e-12, tostring(ord))
    end
  end)
end)
