-- matmul (NumPy semantics: 1-D operands, batches, broadcasting), dot, transpose.
local hl = require "halua"
local np = require "support.numpy"
local suite = require "support.suite"
local diff_check = require "support.diff_check"

math.randomseed(31)

suite("matmul", function(case)
  local shapes = {
    {{2, 3}, {3, 4}}, {{5}, {5}}, {{5}, {5, 3}}, {{3, 5}, {5}}, {{2, 3, 4}, {2, 4, 5}}, {{1, 3, 4}, {2, 4, 5}},
    {{2, 3, 4}, {4, 5}}, {{4}, {2, 4, 3}}, {{2, 1, 3, 4}, {3, 4, 2}}, {{0, 3}, {3, 4}}, {{3, 0}, {0, 4}},
    {{37, 50}, {50, 61}}, {{130, 70}, {70, 100}},
  }
  for _, sp in ipairs(shapes) do
    for _, dtype in ipairs {"float32", "float64", "int32"} do
      local a, b = np.rand(sp[1], -2, 2, dtype), np.rand(sp[2], -2, 2, dtype)
      case(string.format("%s [%s] @ [%s]", dtype, table.concat(sp[1], ","), table.concat(sp[2], ",")),
           function() return hl.matmul(a, b) end, "np.matmul(a, b)", {a, b}, {dtype = dtype, rtol = 1e-5, atol = 1e-5})
    end
  end
  local a, b = np.rand({6, 7}, -1, 1), np.rand({5, 7}, -1, 1)
  case("a @ b.T (a transposed view)", function() return hl.matmul(a, b.T) end, "a @ b.T", {a, b}, {rtol = 1e-5, atol = 1e-6})
  case("a.T @ a", function() return hl.matmul(a.T, a) end, "a.T @ a", {a}, {rtol = 1e-5, atol = 1e-6})
  -- operands whose rows are not unit-stride, at sizes that take the kernel's whole tiles: the
  -- engine copies them first (a transposed A read in place missed the cache at every step)
  local t, u = np.rand({130, 70}, -1, 1), np.rand({130, 90}, -1, 1)
  case("t.T @ u, whole tiles (A a transposed view)", function() return hl.matmul(t.T, u) end, "a.T @ b", {t, u}, {rtol = 1e-5, atol = 1e-5})
  case("t.T @ u under jit (A a transposed argument)", function() return hl.jit(function(p, q) return hl.matmul(p, q) end)(t.T, u) end,
       "a.T @ b", {t, u}, {rtol = 1e-5, atol = 1e-5})
  case("t.T @ u.T.T, float64", function() return hl.matmul(t:astype("float64").T, u:astype("float64").T.T) end,
       "a.T.astype(np.float64) @ b.astype(np.float64)",
       {t, u}, {dtype = "float64", rtol = 1e-12, atol = 1e-12})
  local c, d = np.rand({2, 40, 9}, -1, 1), np.rand({2, 40, 70}, -1, 1)
  case("batched, A transposed in its last two axes", function() return hl.matmul(hl.transpose(c, {1, 3, 2}), d) end,
       "np.matmul(np.transpose(a, (0, 2, 1)), b)", {c, d}, {rtol = 1e-5, atol = 1e-5})
  -- a 2-byte float product is Halide's own (not the engine's kernel); read flipped under jit, its
  -- tile's rows had no constant bound and the pipeline did not compile
  local h1, h2 = np.rand({9, 5}, -1, 1, "float16"), np.rand({5, 70}, -1, 1, "float16")
  case("float16 product read flipped under jit", function() return hl.jit(function(p, q) return hl.flip(hl.matmul(p, q), {-1}) end)(h1, h2) end,
       "np.flip(a.astype(np.float32) @ b.astype(np.float32), axis=-1)", {h1, h2}, {dtype = "float16", rtol = 2e-3, atol = 2e-3})
  local row = np.rand({1, 130}, -1, 1)
  case("A a broadcast row (stride 0)", function() return hl.matmul(hl.broadcast_to(row, {8, 130}), u) end,
       "np.broadcast_to(a, (8, 130)) @ b", {row, u}, {rtol = 1e-5, atol = 1e-5})
  case("int32 @ float32 promotes", function() return hl.matmul(hl.array({{1, 2}}, "int32"), hl.array({{0.5}, {0.25}})) end,
       "np.array([[1.0]])", {}, {dtype = "float32"})
  case("bool @ bool is bool, as NumPy's (an or of ands)", function() return hl.matmul(hl.array({{true, true}, {false, false}}), hl.array({{true}, {true}})) end,
       "np.array([[True], [False]])", {}, {dtype = "bool"})
  case("dot of vectors", function() return hl.dot(hl.array({1, 2, 3}), hl.array({4, 5, 6})) end, "np.float32(32)", {}, {dtype = "float32"})
  case("dot with a 0-d operand scales", function() return hl.dot(hl.array(2), hl.array({4, 5})) end, "np.array([8.0, 10.0])", {}, {dtype = "float32"})
end)

suite("transpose", function(case)
  local x = np.rand({2, 3, 4}, -1, 1)
  case("x.T reverses the axes", function() return x.T end, "a.T", {x})
  case("transpose() reverses", function() return hl.transpose(x) end, "np.transpose(a)", {x})
  for _, perm in ipairs {{1, 3, 2}, {3, 1, 2}, {2, 1, 3}, {-1, 1, 2}} do
    local p = {}
    for i, v in ipairs(perm) do p[i] = v < 0 and 3 + v or v - 1 end
    case("transpose perm {" .. table.concat(perm, ",") .. "}", function() return hl.transpose(x, perm) end,
         "np.transpose(a, (" .. table.concat(p, ",") .. ",))", {x})
  end
  case("a transposed view feeds an elementwise op", function() return x.T * 2 + 1 end, "a.T * 2 + 1", {x})
  case("transpose of a 0-d array", function() return hl.array(3).T end, "np.float32(3)", {})
end)

suite("more matmul", function(case)
  local shapes = {
    {{2, 1, 3, 4}, {1, 5, 4, 2}}, {{4}, {2, 3, 4, 5}}, {{2, 3, 4, 5}, {5}}, {{3, 1, 4}, {4, 2}}, {{1, 4}, {3, 4, 2}},
    {{2, 0, 3}, {3, 4}}, {{1, 1}, {1, 1}}, {{1}, {1}}, {{65, 129}, {129, 33}}, {{3, 17, 9}, {3, 9, 23}},
  }
  for _, sp in ipairs(shapes) do
    for _, dtype in ipairs {"float32", "float64"} do
      local a, b = np.rand(sp[1], -2, 2, dtype), np.rand(sp[2], -2, 2, dtype)
      case(string.format("%s [%s] @ [%s]", dtype, table.concat(sp[1], ","), table.concat(sp[2], ",")),
           function() return hl.matmul(a, b) end, "np.matmul(a, b)", {a, b}, {dtype = dtype, rtol = 1e-5, atol = 1e-5})
    end
  end
  -- narrow products: fewer columns than a vector (the tile's sums run in whole vectors past the
  -- last column, over copies of it), with B a transposed view and under jit (the extern stage)
  for _, sp in ipairs {{{256, 64}, {64, 10}}, {{7, 33}, {33, 1}}, {{13, 5}, {5, 3}}, {{6, 20}, {20, 17}}, {{40, 9}, {9, 15}},
                       {{2, 13, 5}, {5, 3}}, {{3, 7, 9}, {3, 9, 4}}} do
    for _, dtype in ipairs {"float32", "float64"} do
      local a, b = np.rand(sp[1], -2, 2, dtype), np.rand(sp[2], -2, 2, dtype)
      local bshape = {}
      for j = 1, #sp[2] - 2 do bshape[j] = sp[2][j] end
      bshape[#sp[2] - 1], bshape[#sp[2]] = sp[2][#sp[2]], sp[2][#sp[2] - 1]
      local bt = np.rand(bshape, -2, 2, dtype)
      local name = string.format("%s [%s] @ [%s]", dtype, table.concat(sp[1], ","), table.concat(sp[2], ","))
      case(name .. ", narrow", function() return hl.matmul(a, b) end, "np.matmul(a, b)", {a, b}, {dtype = dtype, rtol = 1e-5, atol = 1e-5})
      case(name .. ", narrow, B a transposed view, jit", function() return hl.jit(function(p, q) return hl.matmul(p, hl.transpose(q, #sp[2] == 2 and {2, 1} or {1, 3, 2})) end)(a, bt) end,
           "np.matmul(a, np.swapaxes(b, -1, -2))", {a, bt}, {dtype = dtype, rtol = 1e-5, atol = 1e-5})
      case(name .. ", narrow, A a transposed view", function() return hl.matmul(a.T.T, b) end, "np.matmul(a, b)", {a, b},
           {dtype = dtype, rtol = 1e-5, atol = 1e-5})
    end
  end
  for _, dtype in ipairs {"int64", "uint8"} do
    local a, b = np.rand({3, 4}, 0, 9, dtype), np.rand({4, 2}, 0, 9, dtype)
    case(dtype .. " [3,4] @ [4,2]", function() return hl.matmul(a, b) end, "np.matmul(a, b)", {a, b}, {dtype = false})
  end
  local i64a, i64b = np.rand({2, 3}, -1000, 1000, "int64"), np.rand({3, 2}, -1000, 1000, "int64")
  case("int64 matmul stays int64", function() return hl.matmul(i64a, i64b) end, "np.matmul(a, b)", {i64a, i64b}, {dtype = "int64"})
  local f32, f64 = np.rand({3, 4}, -1, 1), np.rand({4, 2}, -1, 1, "float64")
  case("float32 @ float64 -> float64", function() return hl.matmul(f32, f64) end, "np.matmul(a, b)", {f32, f64}, {dtype = "float64", rtol = 1e-6})
  -- IEEE values flow through: inf * 0 is NaN, NaN propagates, inf survives
  local s = hl.array({{1 / 0, 1}, {0 / 0, 1}, {1, 2}, {-1 / 0, 1 / 0}})
  local t = hl.array({{0, 1, 2}, {1, 1, 0}})
  case("matmul with inf and NaN", function() return hl.matmul(s, t) end, "np.matmul(a, b)", {s, t}, {dtype = "float32"})
  local big = np.rand({40, 70}, -1, 1)
  local big2 = np.rand({70, 50}, -1, 1)
  big = big:at({3, 5}):set(0 / 0):at({7, 7}):set(1 / 0)
  case("a NaN and an inf in a larger matmul", function() return hl.matmul(big, big2) end, "np.matmul(a, b)", {big, big2}, {dtype = "float32", rtol = 1e-5, atol = 1e-5})
  -- non-contiguous operands
  local m, n = np.rand({8, 9}, -1, 1), np.rand({9, 8}, -1, 1)
  case("strided slices as operands", function() return hl.matmul(m[{{1, 8, 2}, {1, 9, 2}}], n[{{9, 1, -2}}]) end,
       "a[0:8:2, 0:9:2] @ b[::-2]", {m, n}, {dtype = "float32", rtol = 1e-5, atol = 1e-6})
  case("a broadcast_to operand", function() return hl.matmul(hl.broadcast_to(m[1], {5, 9}), n) end,
       "np.broadcast_to(a[0], (5, 9)) @ b", {m, n}, {dtype = "float32", rtol = 1e-5, atol = 1e-6})
  case("batched transposed operands", function() return hl.matmul(hl.transpose(hl.reshape(m, {2, 4, 9}), {1, 3, 2}), hl.reshape(m, {2, 4, 9})) end,
       "np.matmul(np.transpose(a.reshape(2, 4, 9), (0, 2, 1)), a.reshape(2, 4, 9))", {m}, {dtype = "float32", rtol = 1e-5, atol = 1e-6})
  case("matmul as a method", function() return m:matmul(n) end, "a @ b", {m, n}, {dtype = "float32", rtol = 1e-5, atol = 1e-6})
  case("matmul under jit", function() return hl.jit(function(p, q) return hl.matmul(p, q) * 2 end)(m, n) end,
       "(a @ b) * 2", {m, n}, {dtype = "float32", rtol = 1e-5, atol = 1e-6})
  -- the CPU matmul extern stage reads its parameter operands from the region its output needs
  case("jit: a block of a product of arguments", function() return hl.jit(function(p, q) return hl.matmul(p, q)[{{2, 5}, {3, 7}}] end)(m, n) end,
       "(a @ b)[1:5, 2:7]", {m, n}, {dtype = "float32", rtol = 1e-5, atol = 1e-6})
  local bm, bn = np.rand({4, 5, 6}, -1, 1), np.rand({4, 6, 3}, -1, 1)
  case("jit: some batch items of a batched product of arguments", function()
    return hl.jit(function(p, q) return hl.matmul(p, q)[{{2, 3}, {2, 4}}] end)(bm, bn)
  end, "(a @ b)[1:3, 1:4]", {bm, bn}, {dtype = "float32", rtol = 1e-5, atol = 1e-6})
end)

suite("more transpose", function(case)
  local x = np.rand({2, 3, 4, 5}, -1, 1)
  for _, perm in ipairs {{4, 3, 2, 1}, {2, 4, 1, 3}, {1, 2, 3, 4}, {-1, -2, 1, 2}} do
    local p = {}
    for i, v in ipairs(perm) do p[i] = v < 0 and 4 + v or v - 1 end
    case("4-d transpose perm {" .. table.concat(perm, ",") .. "}", function() return hl.transpose(x, perm) end,
         "np.transpose(a, (" .. table.concat(p, ",") .. ",))", {x})
  end
  local v = np.rand({5}, -1, 1)
  case("x.T of a 1-d array is itself", function() return v.T end, "a.T", {v})
  case("x.T.T is x", function() return x.T.T end, "a", {x})
  case("transpose then reduce", function() return hl.sum(hl.transpose(x, {3, 1, 4, 2}), {1, 4}) end,
       "np.sum(np.transpose(a, (2, 0, 3, 1)), axis=(0, 3))", {x}, {rtol = 1e-5, atol = 1e-6})
  local i = np.rand({2, 3}, 0, 9, "int64")
  case("transpose keeps int64", function() return i.T end, "a.T", {i})
  case("x:transpose method", function() return x:transpose({2, 1, 3, 4}) end, "np.transpose(a, (1, 0, 2, 3))", {x})
end)

suite("matmul of constant arrays", function(case)
  case("ones [2,1] @ ones [1,3]", function() return hl.matmul(hl.ones({2, 1}), hl.ones({1, 3})) end, "np.ones((2, 3), np.float32)", {})
  case("zeros [3,1] @ a [1,1]", function() return hl.matmul(hl.zeros({3, 1}), hl.array({{2}})) end, "np.zeros((3, 1), np.float32)", {})
  case("full [2,3] @ full [3,1]", function() return hl.matmul(hl.full({2, 3}, 2), hl.full({3, 1}, 0.5)) end, "np.full((2, 1), 3, np.float32)", {})
  case("ones [4] @ ones [4,2]", function() return hl.matmul(hl.ones({4}), hl.ones({4, 2})) end, "np.full(2, 4, np.float32)", {})
  case("eye [3,3] @ ones [3,1]", function() return hl.matmul(hl.eye(3), hl.ones({3, 1})) end, "np.ones((3, 1), np.float32)", {})
end)

suite("large matmul", function(case)
  math.randomseed(14)
  local a, b = np.rand({257, 300}, -1, 1), np.rand({300, 190}, -1, 1)
  case("[257,300] @ [300,190]", function() return hl.matmul(a, b) end, "np.matmul(a.astype(np.float64), b.astype(np.float64))", {a, b}, {dtype = "float32", rtol = 1e-4, atol = 1e-4})
  case("[190,300] @ [300,257] from transposed views", function() return hl.matmul(b.T, a.T) end, "np.matmul(b.T.astype(np.float64), a.T.astype(np.float64))", {a, b}, {dtype = "float32", rtol = 1e-4, atol = 1e-4})
  local c, d = np.rand({4, 100, 80}, -1, 1), np.rand({4, 80, 90}, -1, 1)
  case("batched [4,100,80] @ [4,80,90]", function() return hl.matmul(c, d) end, "np.matmul(a.astype(np.float64), b.astype(np.float64))", {c, d}, {dtype = "float32", rtol = 1e-4, atol = 1e-4})
  local e, f = np.rand({129, 200}, -1, 1, "float64"), np.rand({200, 67}, -1, 1, "float64")
  case("float64 [129,200] @ [200,67]", function() return hl.matmul(e, f) end, "np.matmul(a, b)", {e, f}, {dtype = "float64", rtol = 1e-12, atol = 1e-12})
  local g, h = np.rand({60, 70}, -9, 9, "int32"), np.rand({70, 50}, -9, 9, "int32")
  case("int32 [60,70] @ [70,50]", function() return hl.matmul(g, h) end, "np.matmul(a, b)", {g, h}, {dtype = "int32"})
  local v = np.rand({300}, -1, 1)
  case("[257,300] @ [300] (matrix-vector)", function() return hl.matmul(a, v) end, "np.matmul(a.astype(np.float64), b.astype(np.float64))", {a, v}, {dtype = "float32", rtol = 1e-4, atol = 1e-4})
end)

---------------------------------------------------------------- hl.linalg: solve, inv, cholesky

-- well-conditioned matrices: uniform [-1, 1) plus n on the diagonal (diagonally dominant)
local function wellcond(shape, dtype)
  local n = shape[#shape]
  return np.rand(shape, -1, 1, dtype or "float64") + hl.eye(n, dtype or "float64") * n
end
-- symmetric positive definite: m m^T + n I, made in float64 and given to both sides as is
local function spd(shape, dtype)
  local m = np.rand(shape, -1, 1, "float64")
  local perm = {}
  for i = 1, #shape do perm[i] = i end
  perm[#shape - 1], perm[#shape] = #shape, #shape - 1
  local n = shape[#shape]
  return (hl.matmul(m, hl.transpose(m, perm)) + hl.eye(n, "float64") * n):astype(dtype or "float64")
end
local function dims(s) return "[" .. table.concat(s, ",") .. "]" end
local tol = {float32 = {rtol = 1e-4, atol = 1e-5}, float64 = {rtol = 1e-10, atol = 1e-12}}
-- row and column indices of n x n matrices ([n,1] and [1,n]), made where hl.array makes arrays:
-- on the default device, as the operands they are combined with (HALUA_DEVICE=cuda: the GPU)
local function index_grid(n) return hl.reshape(hl.arange(n), {n, 1}), hl.reshape(hl.arange(n), {1, n}) end
-- NumPy's expression for solve(a, b) as halua reads b: a stack of vectors when b has one
-- dimension fewer than a (NumPy 1's rule), else a stack of matrices. NumPy 2 takes only a 1-D b as
-- a vector, so for a stack of vectors NumPy is given b[..., None] (a stack of one-column
-- matrices, the same on both) and the column is taken back out
local function np_solve(a_ndim, b_ndim, b)
  b = b or "b"
  if b_ndim >= 2 and b_ndim == a_ndim - 1 then return "np.linalg.solve(a, " .. b .. "[..., None])[..., 0]" end
  return "np.linalg.solve(a, " .. b .. ")"
end

suite("linalg.solve against numpy.linalg.solve", function(case)
  math.randomseed(41)
  -- {a's shape, b's shape}: b is a stack of vectors when it has one dimension fewer than a (NumPy
  -- 1.x's rule), else a stack of matrices; batch dimensions broadcast
  local shapes = {
    {{3, 3}, {3}}, {{3, 3}, {3, 2}}, {{4, 3, 3}, {4, 3}}, {{4, 3, 3}, {4, 3, 2}}, {{2, 1, 3, 3}, {1, 5, 3, 2}},
    {{3, 3}, {2, 4, 3, 1}}, {{1, 1}, {1}}, {{1, 1}, {1, 3}}, {{5, 1, 1}, {5, 1}}, {{0, 3, 3}, {0, 3}},
    {{0, 3, 3}, {0, 3, 2}}, {{3, 3}, {3, 0}}, {{2, 4, 4}, {1, 4, 3}}, {{40, 40}, {40, 7}}, {{150, 150}, {150}},
    {{64, 8, 8}, {64, 8, 2}},
  }
  for _, sp in ipairs(shapes) do
    for _, dtype in ipairs {"float32", "float64"} do
      local a, b = wellcond(sp[1], dtype), np.rand(sp[2], -2, 2, dtype)
      case(string.format("%s a %s, b %s", dtype, dims(sp[1]), dims(sp[2])), function() return hl.linalg.solve(a, b) end,
           np_solve(#sp[1], #sp[2]), {a, b}, tol[dtype])
    end
  end
  -- a 1-D b with a stack of matrices: NumPy 1.x raises, halua (like NumPy 2) takes it as a vector
  local a3, v = wellcond({2, 3, 3}), np.rand({3}, -1, 1, "float64")
  case("a [2,3,3] with a 1-D b [3] solves each matrix against b", function() return hl.linalg.solve(a3, v) end,
       np_solve(3, 2, "np.broadcast_to(b, (2, 3))"), {a3, v}, tol.float64)
  local ai, bi = np.rand({3, 3}, -9, 9, "int32") + hl.eye(3, "int32") * 30, np.rand({3, 2}, -9, 9, "int32")
  case("int32 operands promote to float32", function() return hl.linalg.solve(ai, bi) end, "np.linalg.solve(a, b)", {ai, bi},
       {dtype = "float32", rtol = 1e-5, atol = 1e-6})
  local a32, b64 = wellcond({3, 3}, "float32"), np.rand({3}, -1, 1, "float64")
  case("float32 a with float64 b gives float64", function() return hl.linalg.solve(a32, b64) end, "np.linalg.solve(a, b)",
       {a32, b64}, {dtype = "float64", rtol = 1e-10})
  local big = wellcond({6, 6})
  local rhs = np.rand({6, 4}, -1, 1, "float64")
  case("strided operands: a transposed view, every other column of b",
       function() return hl.linalg.solve(big.T, rhs[{{}, {1, 4, 2}}]) end, "np.linalg.solve(a.T, b[:, 0:4:2])", {big, rhs}, tol.float64)
  case("a broadcast_to batch", function() return hl.linalg.solve(hl.broadcast_to(big, {3, 6, 6}), hl.reshape(rhs, {1, 6, 4})) end,
       "np.linalg.solve(np.broadcast_to(a, (3, 6, 6)), b[None])", {big, rhs}, tol.float64)
  -- NumPy 1.x's rule: b with one dimension fewer than a is a stack of vectors
  local a363, b36 = wellcond({3, 6, 6}), np.rand({3, 6}, -1, 1, "float64")
  case("a [3,6,6], b [3,6]: b is a stack of vectors", function() return hl.linalg.solve(a363, b36) end,
       np_solve(3, 2), {a363, b36}, tol.float64)
  case("an empty matrix: a [0,0], b [0]", function() return hl.linalg.solve(hl.zeros({0, 0}, "float64"), hl.zeros({0}, "float64")) end,
       "np.linalg.solve(np.zeros((0, 0)), np.zeros(0))", {}, tol.float64)
  -- under jit: one extern stage per solve, fused with the work around it
  for _, sp in ipairs {{{3, 3}, {3}}, {{4, 3, 3}, {4, 3, 2}}, {{2, 1, 3, 3}, {1, 5, 3, 2}}, {{0, 3, 3}, {0, 3}}, {{40, 40}, {40, 7}}} do
    for _, dtype in ipairs {"float32", "float64"} do
      local a, b = wellcond(sp[1], dtype), np.rand(sp[2], -2, 2, dtype)
      case(string.format("jit: %s a %s, b %s", dtype, dims(sp[1]), dims(sp[2])),
           function() return hl.jit(function(p, q) return hl.linalg.solve(p * 1, q) + 0 end)(a, b) end,
           np_solve(#sp[1], #sp[2]), {a, b}, tol[dtype])
    end
  end
  case("jit: a transposed view of a traced argument", function() return hl.jit(function(p, q) return hl.linalg.solve(p.T, q) end)(big, rhs) end,
       "np.linalg.solve(a.T, b)", {big, rhs}, tol.float64)
  case("jit: only some rows of the solution are used", function()
    return hl.jit(function(p, q) return hl.linalg.solve(p, q)[{{2, 5}, {2, 3}}] end)(big, rhs)
  end, "np.linalg.solve(a, b)[1:5, 1:3]", {big, rhs}, tol.float64)
  local stack = wellcond({4, 5, 5})
  local rhs3 = np.rand({4, 5, 3}, -1, 1, "float64")
  case("jit: some batch items, rows and columns of the solution", function()
    return hl.jit(function(p, q) return hl.linalg.solve(p, q)[{{2, 3}, {2, 4}, {3, 3}}] end)(stack, rhs3)
  end, "np.linalg.solve(a, b)[1:3, 1:4, 2:3]", {stack, rhs3}, tol.float64)
  case("jit: a captured constant matrix", function() return hl.jit(function(q) return hl.linalg.solve(big, q) end)(rhs) end,
       "np.linalg.solve(a, b)", {big, rhs}, tol.float64)
end)

suite("linalg.inv against numpy.linalg.inv", function(case)
  math.randomseed(42)
  for _, shape in ipairs {{3, 3}, {1, 1}, {2, 4, 4}, {2, 3, 5, 5}, {0, 2, 2}, {0, 0}, {60, 60}} do
    for _, dtype in ipairs {"float32", "float64"} do
      local a = wellcond(shape, dtype)
      case(string.format("%s %s", dtype, dims(shape)), function() return hl.linalg.inv(a) end, "np.linalg.inv(a)", {a}, tol[dtype])
    end
  end
  local ai = np.rand({3, 3}, -9, 9, "int32") + hl.eye(3, "int32") * 30
  case("int32 promotes to float32", function() return hl.linalg.inv(ai) end, "np.linalg.inv(a)", {ai}, {dtype = "float32", rtol = 1e-5, atol = 1e-7})
  local a = wellcond({2, 4, 4})
  case("jit: inv", function() return hl.jit(function(p) return hl.linalg.inv(p) end)(a) end, "np.linalg.inv(a)", {a}, tol.float64)
  case("jit: inv(a) @ a is the identity", function() return hl.jit(function(p) return hl.matmul(hl.linalg.inv(p), p) end)(a) end,
       "np.broadcast_to(np.eye(4), (2, 4, 4))", {}, {dtype = "float64", rtol = 1e-12, atol = 1e-12})
end)

suite("linalg.cholesky against numpy.linalg.cholesky", function(case)
  math.randomseed(43)
  for _, shape in ipairs {{3, 3}, {1, 1}, {4, 5, 5}, {2, 1, 3, 3}, {0, 3, 3}, {0, 0}, {70, 70}} do
    for _, dtype in ipairs {"float32", "float64"} do
      local a = spd(shape, dtype)
      case(string.format("%s %s", dtype, dims(shape)), function() return hl.linalg.cholesky(a) end, "np.linalg.cholesky(a)", {a}, tol[dtype])
    end
  end
  -- only the lower triangle is read, as in NumPy: what is above the diagonal does not matter
  local s = spd({4, 4})
  local rows, cols = index_grid(4)
  local junk = s + hl.where(hl.lt(rows, cols), 100, 0)
  case("the upper triangle is not read", function() return hl.linalg.cholesky(junk) end, "np.linalg.cholesky(a)", {junk}, tol.float64)
  local si = hl.array({{4, 2}, {2, 3}}, "int32")
  case("int32 promotes to float32", function() return hl.linalg.cholesky(si) end, "np.linalg.cholesky(a)", {si}, {dtype = "float32"})
  local b = spd({3, 4, 4})
  case("jit: cholesky", function() return hl.jit(function(p) return hl.linalg.cholesky(p) end)(b) end, "np.linalg.cholesky(a)", {b}, tol.float64)
  case("jit: some batch items and a block of the factor", function()
    return hl.jit(function(p) return hl.linalg.cholesky(p)[{{2, 3}, {2, 4}, {3, 4}}] end)(b)
  end, "np.linalg.cholesky(a)[1:3, 1:4, 2:4]", {b}, tol.float64)
  case("jit: a block of the factor", function() return hl.jit(function(p) return hl.linalg.cholesky(p)[{{}, {2, 4}, {1, 2}}] end)(b) end,
       "np.linalg.cholesky(a)[:, 1:4, 0:2]", {b}, tol.float64)
  case("jit: L @ L^T rebuilds a", function()
    return hl.jit(function(p) local l = hl.linalg.cholesky(p) return hl.matmul(l, hl.transpose(l, {1, 3, 2})) end)(b)
  end, "a", {b}, {rtol = 1e-12, atol = 1e-12})
end)

describe("linalg errors", function()
  local function fails(pattern, f, ...)
    local ok, err = pcall(f, ...)
    assert.is_false(ok, "expected an error matching " .. pattern)
    assert.is_truthy(tostring(err):find(pattern), "error was: " .. tostring(err))
  end
  local sing = hl.array({{1, 2}, {2, 4}}, "float64")
  local good = hl.array({{2, 1}, {1, 3}}, "float64")
  local stack = hl.stack and hl.stack({good, sing, good}) or hl.concatenate({hl.reshape(good, {1, 2, 2}), hl.reshape(sing, {1, 2, 2}), hl.reshape(good, {1, 2, 2})}, 1)
  it("a singular matrix: eager solve and inv raise, naming the op and the shape", function()
    fails("^halua: linalg%.solve: singular matrix %(a is float64%[2,2%]%)", hl.linalg.solve, sing, hl.ones({2}, "float64"))
    fails("^halua: linalg%.inv: singular matrix", hl.linalg.inv, sing)
    fails("^halua: linalg%.solve: singular matrix at batch index %[2%] of a float64%[3,2,2%]", hl.linalg.solve, stack, hl.ones({3, 2}, "float64"))
    fails("^halua: linalg%.solve: singular matrix", hl.linalg.solve, hl.zeros({1, 1}), hl.ones({1}))
  end)
  it("a matrix that is not positive definite: eager cholesky raises", function()
    fails("^halua: linalg%.cholesky: matrix is not positive definite %(a is float64%[2,2%]%)", hl.linalg.cholesky, hl.array({{1, 2}, {2, 1}}, "float64"))
    fails("^halua: linalg%.cholesky: matrix is not positive definite at batch index %[2%]", hl.linalg.cholesky, stack)
    fails("^halua: linalg%.cholesky: matrix is not positive definite", hl.linalg.cholesky, hl.array({{0 / 0}}))
  end)
  it("inside jit a matrix with no answer gives NaN for that matrix only", function()
    local x = hl.jit(function(p, q) return hl.linalg.solve(p, q) end)(stack, hl.ones({3, 2}, "float64")):totable()
    local want = hl.linalg.solve(good, hl.ones({2}, "float64")):totable()
    for _, i in ipairs {1, 3} do
      for j = 1, 2 do assert.is_true(math.abs(x[i][j] - want[j]) < 1e-14) end
    end
    assert.is_true(x[2][1] ~= x[2][1] and x[2][2] ~= x[2][2])
    local inv = hl.jit(hl.linalg.inv)(stack):totable()
    assert.is_true(inv[2][1][1] ~= inv[2][1][1] and inv[1][1][1] == inv[1][1][1])
    local l = hl.jit(hl.linalg.cholesky)(stack):totable()
    for _, row in ipairs(l[2]) do for _, e in ipairs(row) do assert.is_true(e ~= e) end end
    assert.is_true(math.abs(l[1][1][1] - math.sqrt(2)) < 1e-15 and l[1][1][2] == 0 and l[3][2][1] == l[1][2][1])
  end)
  it("wrong shapes name the op and the shapes", function()
    local a = hl.eye(3)
    fails("^halua: linalg%.solve: a must be a square matrix or a stack of them %(%[%.%.%., n, n%]%), got shape %[2,3%]", hl.linalg.solve, hl.ones({2, 3}), hl.ones({2}))
    fails("^halua: linalg%.solve: a must be a square matrix.*got shape %[3%]", hl.linalg.solve, hl.ones({3}), hl.ones({3}))
    fails("^halua: linalg%.solve: b of shape %[4%] does not match a of shape %[3,3%] %(b needs %[%.%.%., 3%] or %[%.%.%., 3, k%]%)", hl.linalg.solve, a, hl.ones({4}))
    fails("^halua: linalg%.solve: b of shape %[2,2,3%] does not match a of shape %[3,3%]", hl.linalg.solve, a, hl.ones({2, 2, 3}))
    fails("^halua: linalg%.solve: batch dimensions of a %[2,3,3%] and b %[4,3,1%] do not broadcast", hl.linalg.solve, hl.ones({2, 3, 3}), hl.ones({4, 3, 1}))
    fails("^halua: linalg%.solve: b must be a vector or matrix", hl.linalg.solve, a, hl.array(1))
    fails("^halua: linalg%.solve: argument 2 is a string, expected an array", hl.linalg.solve, a, "b")
    fails("^halua: linalg%.solve: argument 1 is a table, expected an array %(make one with hl%.array%)", hl.linalg.solve, {{1}}, a)
    fails("^halua: linalg%.inv: a must be a square matrix.*got shape %[2,3%]", hl.linalg.inv, hl.ones({2, 3}))
    fails("^halua: linalg%.inv: argument 1 is nil, expected an array", hl.linalg.inv)
    fails("^halua: linalg%.cholesky: a must be a square matrix.*got shape %[%]", hl.linalg.cholesky, hl.array(2))
    fails("^halua: linalg%.cholesky: a must be a square matrix.*got shape %[3,1%]", hl.jit(hl.linalg.cholesky), hl.ones({3, 1}))
  end)
  it("in a cuda pipeline, LAPACK is a host stage: its arguments are staged to the host", function()
    -- lowering for cuda needs no GPU; scripts/test-gpu runs these pipelines on one
    local f = hl.jit(function(p, q) return hl.linalg.solve(p, q) end, {device = "cuda"})
    local stmt = f:lower(good, good):stmt()
    assert.truthy(stmt:find("hl_stage_linalg_solve", 1, true), stmt)
    assert.truthy(stmt:find("_halide_buffer_set_host_dirty", 1, true), stmt)
    local g = hl.jit(hl.linalg.cholesky, {device = "cuda"})
    assert.truthy(g:lower(good):stmt():find("hl_stage_linalg_cholesky", 1, true))
  end)
end)

-- derivatives against central differences (float64); every one also under jit
describe("linalg derivatives", function()
  local F64 = "float64"
  local flat, numeric, close = diff_check.flat, diff_check.numeric, diff_check.close
  math.randomseed(44)
  local A = wellcond({2, 3, 3})
  local A2 = wellcond({3, 3})
  local B = np.rand({2, 3, 2}, -1, 1, F64)
  local W = np.rand({2, 3, 2}, -1, 1, F64)
  local V = np.rand({3}, -1, 1, F64)
  local cases = {
    {"solve by a", function(a) return (hl.linalg.solve(a, B) * W):sum() end, A},
    {"solve by b", function(b) return (hl.linalg.solve(A, b) * W):sum() end, B},
    {"solve by a shared across b's batch (broadcast)", function(a) return (hl.linalg.solve(a, B) * W):sum() end, A2},
    {"solve by a, 1-D b", function(a) return (hl.linalg.solve(a, V) ^ 2):sum() end, A2},
    {"solve by a 1-D b", function(v) return hl.sin(hl.linalg.solve(A2, v)):sum() end, V},
    {"inv", function(a) return (hl.linalg.inv(a) * hl.linalg.inv(a)):sum() end, A},
    {"cholesky", function(a) return (hl.linalg.cholesky(a) * hl.matmul(W, hl.transpose(W, {1, 3, 2}))):sum() end, spd({2, 3, 3})},
    {"cholesky, log-determinant", function(a)
      local l = hl.linalg.cholesky(a)
      return 2 * hl.log(hl.sum(l * hl.eye(4, F64), -1)):sum()
    end, spd({4, 4})},
  }
  for _, c in ipairs(cases) do
    local name, f, x = c[1], c[2], c[3]
    it(name .. ": grad against central differences, eager and jit", function()
      local want = numeric(f, x)
      close(hl.grad(f)(x), want, 1e-7, "eager")
      close(hl.jit(hl.grad(f))(x), want, 1e-7, "jit")
    end)
  end
  it("the log-determinant's gradient is inv(a)^T (a symmetric: only the lower triangle is read, so it folds there)", function()
    local s = spd({3, 3})
    local g = hl.grad(function(a) return 2 * hl.log(hl.sum(hl.linalg.cholesky(a) * hl.eye(3, F64), -1)):sum() end)(s)
    local inv = hl.linalg.inv(s)
    local rows, cols = index_grid(3)
    local want = hl.where(hl.gt(rows, cols), 2 * inv, hl.where(hl.eq(rows, cols), inv, 0))
    close(g, flat(want), 1e-12, "grad")
  end)
  it("jvp of solve and cholesky against central differences", function()
    local eps = 1e-6
    local T, U = np.rand({2, 3, 3}, -1, 1, F64), np.rand({2, 3, 2}, -1, 1, F64)
    for _, jit in ipairs {false, true} do
      local wrap = jit and hl.jit or function(f) return f end
      local _, t = wrap(function(a, b) return hl.jvp(hl.linalg.solve, {a, b}, {T, U}) end)(A, B)
      local d = (hl.linalg.solve(A + eps * T, B + eps * U) - hl.linalg.solve(A - eps * T, B - eps * U)) / (2 * eps)
      close(t, flat(d), 1e-7, "solve jvp")
      local S = spd({2, 3, 3})
      local _, tc = wrap(function(a) return hl.jvp(hl.linalg.cholesky, {a}, {T}) end)(S)
      local dc = (hl.linalg.cholesky(S + eps * T) - hl.linalg.cholesky(S - eps * T)) / (2 * eps)
      close(tc, flat(dc), 1e-7, "cholesky jvp")
    end
  end)
  it("second derivatives: hessian of |solve(a, b)|^2 by b is 2 inv(a)^T inv(a)", function()
    local f = function(b) return (hl.linalg.solve(A2, b) ^ 2):sum() end
    local inv = hl.linalg.inv(A2)
    local want = flat(2 * hl.matmul(inv.T, inv))
    close(hl.hessian(f)(V), want, 1e-10, "eager")
    close(hl.jit(hl.hessian(f))(V), want, 1e-10, "jit")
  end)
  it("a Newton step with hl.hessian and solve lands on a quadratic's minimiser", function()
    local Q = spd({4, 4})
    local b = np.rand({4}, -1, 1, F64)
    local f = function(x) return 0.5 * (x * hl.matmul(Q, x)):sum() - (b * x):sum() end
    local newton = function(x) return x - hl.linalg.solve(hl.hessian(f)(x), hl.grad(f)(x)) end
    local x0 = np.rand({4}, -5, 5, F64)
    local want = flat(hl.linalg.solve(Q, b))
    close(newton(x0), want, 1e-12, "eager")
    close(hl.jit(newton)(x0), want, 1e-12, "jit")
  end)
  it("a singular matrix under grad outside jit is the eager error", function()
    local ok, err = pcall(hl.grad(function(a) return hl.linalg.solve(a, hl.ones({2}, F64)):sum() end), hl.array({{1, 2}, {2, 4}}, F64))
    assert.is_false(ok)
    assert.is_truthy(err:find("^halua: linalg%.solve: singular matrix"))
  end)
end)

describe("linalg under vmap", function()
  math.randomseed(45)
  local function same(got, want, tol)
    local g, w = hl.reshape(got, {got.size}):totable(), hl.reshape(want, {want.size}):totable()
    assert.are.same(want.shape, got.shape)
    for i = 1, #w do assert.is_true(math.abs(g[i] - w[i]) <= tol * (1 + math.abs(w[i])), i .. ": " .. g[i] .. " vs " .. w[i]) end
  end
  local a, b = wellcond({4, 3, 3}), np.rand({4, 3}, -1, 1, "float64")
  it("solve, inv and cholesky map over a leading axis like their batched forms", function()
    same(hl.vmap(hl.linalg.solve)(a, b), hl.linalg.solve(a, b), 1e-14)
    same(hl.vmap(hl.linalg.solve, {1, false})(a, b[1]), hl.linalg.solve(a, hl.broadcast_to(b[1], {4, 3})), 1e-14)
    same(hl.vmap(hl.linalg.solve, {false, 1})(a[2], b), hl.linalg.solve(a[2], b.T).T, 1e-14)
    same(hl.jit(hl.vmap(hl.linalg.inv))(a), hl.linalg.inv(a), 1e-14)
    local s = spd({4, 3, 3})
    same(hl.vmap(hl.linalg.cholesky)(s), hl.linalg.cholesky(s), 1e-14)
  end)
  it("grad of vmap of solve", function()
    local f = function(m) return (hl.vmap(hl.linalg.solve)(m, b) ^ 2):sum() end
    local g = function(m) return (hl.linalg.solve(m, b) ^ 2):sum() end
    same(hl.grad(f)(a), hl.grad(g)(a), 1e-12)
  end)
end)

describe("linalg with NaN or infinity in the matrix", function()
  it("solve and inv give all NaN, as NumPy does, eagerly, under jit and per batch item", function()
    local function all_nan(x)
      for _, v in ipairs(hl.reshape(x, {-1}):totable()) do if v == v then return false end end
      return true
    end
    for _, dt in ipairs({"float32", "float64"}) do
      local bad = hl.array({{1, 2}, {3, 0 / 0}}, dt)
      local inf = hl.array({{1 / 0, 2}, {3, 4}}, dt)
      for _, m in ipairs({bad, inf}) do
        assert.is_true(all_nan(hl.linalg.solve(m, hl.array({1, 1}, dt))))
        assert.is_true(all_nan(hl.linalg.inv(m)))
        assert.is_true(all_nan(hl.jit(hl.linalg.inv)(m)))
      end
      -- only the bad item of a batch: the other stays exact
      local batch = hl.stack({bad, hl.array({{2, 0}, {0, 4}}, dt)})
      local r = hl.linalg.inv(batch)
      assert.is_true(all_nan(r[1]))
      assert.are.same({{0.5, 0}, {0, 0.25}}, r[2]:totable())
      -- a NaN in b spoils its own column only (it flows through the solve like any value)
      local x = hl.linalg.solve(hl.array({{2, 0}, {0, 2}}, dt), hl.array({{1, 0 / 0}, {1, 1}}, dt)):totable()
      assert.are.same({0.5, 0.5}, {x[1][1], x[2][1]})
      assert.is_true(x[1][2] ~= x[1][2] and x[2][2] ~= x[2][2])
    end
  end)
end)

describe("LAPACK opened at its first use", function()
  -- a new process: LAPACK is not among its mappings after require and other work, and is once a
  -- solve has run (engine/host/hl_lapack.h)
  it("is not loaded by require or other ops, and is by the first solve", function()
    local script = [[
local hl = require "halua"
local function lapack_mapped()
  for line in io.lines("/proc/self/maps") do if line:find("lapack", 1, true) then return true end end
  return false
end
local x = hl.matmul(hl.ones({4, 4}), hl.ones({4, 4})) + hl.sum(hl.arange(5))
local before = lapack_mapped()
local s = hl.linalg.solve(hl.array({{2, 0}, {0, 4}}, "float64"), hl.array({2, 8}, "float64")):totable()
io.write(tostring(before), " ", tostring(lapack_mapped()), " ", s[1], " ", s[2], "\n")
]]
    local path = os.tmpname()
    local f = assert(io.open(path, "w"))
    f:write(script)
    f:close()
    -- (stdout alone: under the sanitizers the child's stderr has their notices)
    local p = assert(io.popen("luajit " .. path .. " 2>" .. path .. ".err"))
    local out = p:read("*a")
    p:close()
    local ef = io.open(path .. ".err")
    local err = ef and ef:read("*a") or ""
    if ef then ef:close() end
    os.remove(path)
    os.remove(path .. ".err")
    assert.are.equal("false true 1 2\n", out, err)
  end)
end)
