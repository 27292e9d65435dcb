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
