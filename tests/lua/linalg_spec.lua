-- matmul (NumPy semantics: 1-D operands, batches, broadcasting), dot, transpose.
local hl = require "halua"
local np = require "support.numpy"
local suite = require "support.suite"

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
  case("int32 @ float32 promotes", function() return hl.matmul(hl.array({{1, 2}}, "int32"), hl.array({{0.5}, {0.25}})) end,
       "np.array([[1.0]])", {}, {dtype = "float32"})
  case("bool @ bool counts in int32", function() return hl.matmul(hl.array({{true, true}}), hl.array({{true}, {true}})) end,
       "np.array([[2]])", {}, {dtype = "int32"})
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
