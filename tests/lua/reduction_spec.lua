-- Reductions against NumPy: every axis form (none, one, negative, several), keepdims, dtypes,
-- zero-size axes, NaN; and the composites mean, logsumexp, softmax.
local hl = require "halua"
local np = require "support.numpy"
local suite = require "support.suite"

math.randomseed(21)

local function axes_name(ax)
  if ax == nil then return "all" end
  if type(ax) == "table" then return "{" .. table.concat(ax, ",") .. "}" end
  return tostring(ax)
end
-- NumPy's axis argument for 1-based (possibly negative) halua axes
local function np_axis(ax)
  if ax == nil then return "None" end
  local function one(a) return a < 0 and tostring(a) or tostring(a - 1) end
  if type(ax) == "table" then
    local t = {}
    for i, a in ipairs(ax) do t[i] = one(a) end
    return "(" .. table.concat(t, ",") .. ",)"
  end
  return one(ax)
end

suite("reductions", function(case)
  local x = np.rand({3, 4, 5}, -3, 3)
  local axes = {false, 1, 2, 3, -1, {1, 3}, {2, 3}, {1, 2, 3}}
  for _, op in ipairs {"sum", "prod", "max", "min", "mean"} do
    for _, dtype in ipairs {"float32", "float64", "int32"} do
      local a = dtype == "int32" and np.rand({3, 4, 5}, -3, 4, "int32") or x:astype(dtype)
      if op == "prod" then a = dtype == "int32" and np.rand({3, 4, 5}, -2, 3, "int32") or (x / 3 + 1):astype(dtype) end
      for _, ax in ipairs(axes) do
        ax = ax or nil
        for _, keep in ipairs {false, true} do
          local want_dtype = (op == "mean" and dtype == "int32") and "float32" or dtype
          local expr = string.format("np.%s(a, axis=%s, keepdims=%s)", op, np_axis(ax), keep and "True" or "False")
          case(string.format("%s %s axis=%s keepdims=%s", op, dtype, axes_name(ax), tostring(keep)),
               function() return hl[op](a, ax, keep) end, expr, {a}, {dtype = want_dtype, rtol = 1e-5, atol = 1e-5})
        end
      end
    end
  end
  for _, op in ipairs {"argmax", "argmin"} do
    for _, dtype in ipairs {"float32", "int32", "uint8"} do
      local a = dtype == "float32" and x or np.rand({3, 4, 5}, 0, 5, dtype)
      for _, ax in ipairs {1, 2, 3, -1} do
        case(string.format("%s %s axis=%s (1-based)", op, dtype, ax), function() return hl[op](a, ax) end,
             string.format("np.%s(a, axis=%s) + 1", op, np_axis(ax)), {a}, {dtype = "int64"})
      end
      case(op .. " " .. dtype .. " over everything", function() return hl[op](a) end, string.format("np.%s(a) + 1", op), {a}, {dtype = "int64"})
    end
  end
  -- ties pick the first, NaN wins (NumPy's rules)
  local t = hl.array({{1, 7, 7, 2}, {0 / 0, 3, 0 / 0, 9}, {-1 / 0, -1 / 0, -2, -2}})
  for _, op in ipairs {"argmax", "argmin"} do
    case(op .. " with ties and NaN", function() return hl[op](t, 2) end, string.format("np.%s(a, axis=1) + 1", op), {t}, {dtype = "int64"})
  end
  for _, op in ipairs {"max", "min", "sum"} do
    case(op .. " propagates NaN", function() return hl[op](t, 2) end, string.format("np.%s(a, axis=1)", op), {t}, {dtype = "float32"})
  end
  -- sums of bool and uint8 count in int32 (JAX's rule; NumPy widens further, the values agree)
  local b = np.rand({4, 6}, 0, 1, "bool")
  case("sum of bool -> int32", function() return hl.sum(b, 2) end, "np.sum(a, axis=1)", {b}, {dtype = "int32"})
  local u = np.rand({4, 6}, 0, 255, "uint8")
  case("sum of uint8 -> int32", function() return hl.sum(u) end, "np.sum(a)", {u}, {dtype = "int32"})
  -- zero-size axes: sum 0, prod 1
  local z = hl.zeros({2, 0, 3})
  case("sum over a zero-size axis", function() return hl.sum(z, 2) end, "np.sum(a, axis=1)", {z}, {dtype = "float32"})
  case("prod over a zero-size axis", function() return hl.prod(z, 2) end, "np.prod(a, axis=1)", {z}, {dtype = "float32"})
  case("sum of an empty array", function() return hl.sum(z) end, "np.sum(a)", {z}, {dtype = "float32"})
  -- 0-d and larger inputs (several parallel tasks)
  local s0 = hl.array(2.5)
  case("sum of a 0-d array", function() return hl.sum(s0) end, "np.sum(a)", {s0}, {dtype = "float32"})
  local big = np.rand({300, 257}, -1, 1)
  case("sum over rows of 300x257", function() return hl.sum(big, 2) end, "np.sum(a, axis=1)", {big}, {rtol = 1e-4, atol = 1e-4})
  case("sum over columns of 300x257", function() return hl.sum(big, 1) end, "np.sum(a, axis=0)", {big}, {rtol = 1e-4, atol = 1e-4})
  case("max of 300x257 transposed", function() return hl.max(big.T, 2) end, "np.max(a.T, axis=1)", {big})
  -- composites
  for _, ax in ipairs {1, 2, -1} do
    case("logsumexp axis " .. ax, function() return hl.logsumexp(big, ax) end,
         string.format("np.log(np.sum(np.exp(a), axis=%s))", np_axis(ax)), {big}, {rtol = 1e-5, atol = 1e-5})
    case("softmax axis " .. ax, function() return hl.nn.softmax(big, ax) end,
         string.format("np.exp(a) / np.sum(np.exp(a), axis=%s, keepdims=True)", np_axis(ax)), {big}, {rtol = 1e-4, atol = 1e-7})
  end
  local wide = hl.array({{1000, 1001, 999}, {-1 / 0, 0, -1 / 0}, {-1 / 0, -1 / 0, -1 / 0}})
  case("logsumexp is stable and handles -inf rows", function() return hl.logsumexp(wide, 2) end,
       "np.array([1000 + np.log(np.exp(0) + np.exp(1) + np.exp(-1)) - 0, 0, -np.inf])", {wide}, {dtype = "float32", rtol = 1e-6})
  case("softmax is stable", function() return hl.nn.softmax(wide[{{1, 2}}], 2) end,
       "np.array([np.exp([-1, 0, -2]) / np.sum(np.exp([-1, 0, -2])), [0, 1, 0]])", {}, {dtype = "float32", rtol = 1e-5})
  case("log_softmax", function() return hl.nn.log_softmax(big, 2) end,
       "a - np.log(np.sum(np.exp(a), axis=1, keepdims=True))", {big}, {rtol = 1e-5, atol = 1e-5})
  case("mean of int32 is float32", function() return hl.mean(hl.array({1, 2, 4}, "int32")) end, "np.float32(7 / 3)", {}, {dtype = "float32"})
end)
