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

suite("more reductions", function(case)
  local x = np.rand({3, 4, 5}, -3, 3)
  -- several axes with negatives, keepdims, and 1-d / 2-d inputs
  for _, ax in ipairs {{-1, 1}, {-3, -1}, {2, -1}, {-2}} do
    for _, keep in ipairs {false, true} do
      for _, op in ipairs {"sum", "max", "mean", "logsumexp"} do
        local expr = op == "logsumexp" and string.format("np.log(np.sum(np.exp(a), axis=%s, keepdims=%s))", np_axis(ax), keep and "True" or "False")
                     or string.format("np.%s(a, axis=%s, keepdims=%s)", op, np_axis(ax), keep and "True" or "False")
        case(string.format("%s axis=%s keepdims=%s", op, axes_name(ax), tostring(keep)), function() return hl[op](x, ax, keep) end,
             expr, {x}, {dtype = "float32", rtol = 1e-5, atol = 1e-5})
      end
    end
  end
  case("keepdims over everything", function() return hl.sum(x, nil, true) end, "np.sum(a, keepdims=True)", {x}, {dtype = "float32", rtol = 1e-5, atol = 1e-5})
  local v = np.rand({9}, -3, 3)
  for _, op in ipairs {"sum", "prod", "max", "min", "mean"} do
    case(op .. " of a 1-d array, axis 1", function() return hl[op](v, 1) end, "np." .. op .. "(a, axis=0)", {v}, {dtype = "float32", rtol = 1e-5})
    case(op .. " of a 1-d array, axis -1, keepdims", function() return hl[op](v, -1, true) end, "np." .. op .. "(a, axis=-1, keepdims=True)", {v}, {dtype = "float32", rtol = 1e-5})
    case(op .. " as a method", function() return x[op](x, 2) end, "np." .. op .. "(a, axis=1)", {x}, {dtype = "float32", rtol = 1e-5, atol = 1e-5})
  end
  -- dtypes
  local i64 = np.rand({4, 5}, -1000, 1000, "int64")
  local u8 = np.rand({4, 5}, 0, 255, "uint8")
  local b = np.rand({4, 5}, 0, 1, "bool")
  local f64 = np.rand({4, 5}, -3, 3, "float64")
  case("sum int64 stays int64", function() return hl.sum(i64, 1) end, "np.sum(a, axis=0)", {i64}, {dtype = "int64"})
  case("prod int64 stays int64", function() return hl.prod(i64[{{1, 2}}], 1) end, "np.prod(a[0:2], axis=0)", {i64}, {dtype = "int64"})
  case("max/min of int64", function() return hl.max(i64, 2) - hl.min(i64, 2) end, "np.max(a, axis=1) - np.min(a, axis=1)", {i64}, {dtype = "int64"})
  case("max of uint8 stays uint8", function() return hl.max(u8, 2) end, "np.max(a, axis=1)", {u8}, {dtype = "uint8"})
  case("min of uint8 stays uint8", function() return hl.min(u8) end, "np.min(a)", {u8}, {dtype = "uint8"})
  case("prod of uint8 -> int32", function() return hl.prod(u8[{{}, {1, 2}}], 2) end, "np.prod(a[:, 0:2].astype(np.int32), axis=1)", {u8}, {dtype = "int32"})
  case("max of bool stays bool", function() return hl.max(b, 2) end, "np.max(a, axis=1)", {b}, {dtype = "bool"})
  case("min of bool stays bool", function() return hl.min(b, 1) end, "np.min(a, axis=0)", {b}, {dtype = "bool"})
  case("sum of bool over everything -> int32", function() return hl.sum(b) end, "np.sum(a).astype(np.int32)", {b}, {dtype = "int32"})
  case("mean of uint8 -> float32", function() return hl.mean(u8, 2) end, "np.mean(a, axis=1).astype(np.float32)", {u8}, {dtype = "float32"})
  case("mean of bool -> float32", function() return hl.mean(b) end, "np.mean(a).astype(np.float32)", {b}, {dtype = "float32"})
  case("mean of float64 stays float64", function() return hl.mean(f64, {1, 2}) end, "np.mean(a, axis=(0, 1))", {f64}, {dtype = "float64"})
  case("prod of float64", function() return hl.prod(f64, 2) end, "np.prod(a, axis=1)", {f64}, {dtype = "float64"})
  case("logsumexp float64", function() return hl.logsumexp(f64, 2) end, "np.log(np.sum(np.exp(a), axis=1))", {f64}, {dtype = "float64"})
  case("softmax float64", function() return hl.nn.softmax(f64, 1) end, "np.exp(a) / np.sum(np.exp(a), axis=0, keepdims=True)", {f64}, {dtype = "float64"})
  -- argmax/argmin: keepdims, negatives, bool, 1-d, views
  case("argmax keepdims", function() return hl.argmax(x, 2, true) end, "np.argmax(a, axis=1, keepdims=True) + 1", {x}, {dtype = "int64"})
  case("argmin axis -2", function() return hl.argmin(x, -2) end, "np.argmin(a, axis=-2) + 1", {x}, {dtype = "int64"})
  case("argmax of bool", function() return hl.argmax(b, 2) end, "np.argmax(a, axis=1) + 1", {b}, {dtype = "int64"})
  case("argmax of a 1-d array", function() return hl.argmax(v) end, "np.argmax(a) + 1", {v}, {dtype = "int64"})
  case("argmax of a transposed view", function() return hl.argmax(x.T, 1) end, "np.argmax(a.T, axis=0) + 1", {x}, {dtype = "int64"})
  case("argmax over everything of a transposed view", function() return hl.argmax(x.T) end, "np.argmax(a.T) + 1", {x}, {dtype = "int64"})
  case("argmax of an all -inf row", function() return hl.argmax(hl.array({{-1 / 0, -1 / 0}, {1, 1 / 0}}), 2) end,
       "np.array([1, 2], np.int64)", {}, {dtype = "int64"})
  case("argmin of float64 with NaN", function() return hl.argmin(hl.array({3, 0 / 0, -1, 0 / 0}, "float64")) end,
       "np.argmin(np.array([3, np.nan, -1, np.nan])) + 1", {}, {dtype = "int64"})
  -- non-contiguous inputs: transposed, strided, broadcast (stride 0)
  case("sum of a transposed view over axis 2", function() return hl.sum(x.T, 2) end, "np.sum(a.T, axis=1)", {x}, {dtype = "float32", rtol = 1e-5, atol = 1e-5})
  case("max of a strided slice", function() return hl.max(x[{{1, 3, 2}, {4, 1, -1}, {1, 5, 2}}], {1, 3}) end,
       "np.max(a[0:3:2, ::-1, 0:5:2], axis=(0, 2))", {x}, {dtype = "float32"})
  -- (the reference sums in float64: NumPy's own float32 sum down axis 0 drifts by 1e-5 here)
  case("sum of a broadcast_to view", function() return hl.sum(hl.broadcast_to(v, {1000, 9}), 1) end,
       "np.sum(np.broadcast_to(a, (1000, 9)).astype(np.float64), axis=0).astype(np.float32)", {v}, {dtype = "float32", rtol = 1e-5, atol = 1e-4})
  case("mean of a broadcast_to view over everything", function() return hl.mean(hl.broadcast_to(v:reshape({9, 1}), {9, 300})) end,
       "np.mean(np.broadcast_to(a.reshape(9, 1), (9, 300)))", {v}, {dtype = "float32", rtol = 1e-5, atol = 1e-6})
  -- empty and special inputs
  case("mean of an empty array is NaN", function() return hl.mean(hl.zeros({0})) end, "np.float32(np.nan)", {}, {dtype = "float32"})
  case("mean over a zero-size axis is NaN", function() return hl.mean(hl.zeros({2, 0}), 2) end, "np.full(2, np.nan, np.float32)", {}, {dtype = "float32"})
  case("sum over a non-empty axis of a zero-size array", function() return hl.sum(hl.zeros({0, 3}), 2) end, "np.zeros(0, np.float32)", {}, {dtype = "float32"})
  case("sum of int32 over a zero-size axis", function() return hl.sum(hl.zeros({3, 0}, "int32"), 2) end, "np.zeros(3, np.int32)", {}, {dtype = "int32"})
  local sp = hl.array({{1 / 0, 1}, {1 / 0, -1 / 0}, {-1 / 0, -1 / 0}, {0 / 0, 1}})
  case("logsumexp with +inf, both infinities, all -inf, NaN", function() return hl.logsumexp(sp, 2) end,
       "np.log(np.sum(np.exp(a), axis=1))", {sp}, {dtype = "float32"})
  case("sum with both infinities is NaN", function() return hl.sum(sp, 2) end, "np.sum(a, axis=1)", {sp}, {dtype = "float32"})
  case("prod of zero and inf is NaN", function() return hl.prod(hl.array({0, 1 / 0, 2})) end, "np.prod(np.array([0, np.inf, 2], np.float32))", {}, {dtype = "float32"})
  case("softmax with -inf entries", function() return hl.nn.softmax(hl.array({{-1 / 0, 0, 1}, {2, -1 / 0, -1 / 0}}), 2) end,
       "(lambda z: np.exp(z) / np.exp(z).sum(1, keepdims=True))(np.array([[-np.inf, 0, 1], [2, -np.inf, -np.inf]], np.float32))", {}, {dtype = "float32"})
  case("softmax axis -1 of a 3-d array", function() return hl.nn.softmax(x, -1) end,
       "np.exp(a) / np.sum(np.exp(a), axis=-1, keepdims=True)", {x}, {dtype = "float32", rtol = 1e-5, atol = 1e-7})
  -- a large float32 sum should be about as accurate as NumPy's pairwise summation
  case("sum of 10^7 float32 values of 0.1", function() return hl.sum(hl.full({10000000}, 0.1)) end,
       "np.float32(np.sum(np.full(10**7, np.float32(0.1), np.float64)))", {}, {dtype = "float32", rtol = 1e-4})
  case("mean of 4 x 2.5*10^6 float32 values along rows", function() return hl.mean(hl.full({4, 2500000}, 0.1), 2) end,
       "np.full(4, np.float32(0.1), np.float32)", {}, {dtype = "float32", rtol = 1e-4})
end)

-- arrays made by zeros/ones/full/*_like, and broadcasts, with size-1 axes (the last one included)
suite("reductions of constant and broadcast arrays with size-1 axes", function(case)
  for _, s in ipairs {{2, 1}, {1, 2, 1}, {3, 2, 1, 2, 1}, {1, 2}, {2, 1, 3}} do
    local shp = table.concat(s, ", ")
    local name = "[" .. table.concat(s, ",") .. "]"
    case("sum of ones " .. name .. " over axis 1", function() return hl.sum(hl.ones(s), 1) end,
         "np.sum(np.ones((" .. shp .. ",), np.float32), axis=0)", {}, {dtype = "float32"})
    case("max of zeros " .. name .. " over everything", function() return hl.max(hl.zeros(s)) end,
         "np.max(np.zeros((" .. shp .. ",), np.float32))", {}, {dtype = "float32"})
    case("argmax of full " .. name .. " over axis -1", function() return hl.argmax(hl.full(s, 2), -1) end,
         "np.argmax(np.full((" .. shp .. ",), 2, np.float32), axis=-1) + 1", {}, {dtype = "int64"})
    case("mean of a 0-d broadcast to " .. name .. " over axis 1", function() return hl.mean(hl.broadcast_to(hl.array(3), s), 1) end,
         "np.mean(np.full((" .. shp .. ",), 3, np.float32), axis=0)", {}, {dtype = "float32"})
  end
  case("sum of int32 full {3,1} over axis 1", function() return hl.sum(hl.full({3, 1}, 2, "int32"), 1) end,
       "np.full(1, 6, np.int32)", {}, {dtype = "int32"})
  case("sum of ones_like over axis 2", function() return hl.sum(hl.ones_like(hl.array({{1}, {2}})), 2) end,
       "np.ones(2, np.float32)", {}, {dtype = "float32"})
  case("sum of ones {3,2,1,2,1} over {1,2}", function() return hl.sum(hl.ones({3, 2, 1, 2, 1}), {1, 2}) end,
       "np.full((1, 2, 1), 6, np.float32)", {}, {dtype = "float32"})
end)

suite("large reductions", function(case)
  math.randomseed(13)
  local a = np.rand({700, 300}, -2, 2)
  case("sum [700,300] over axis 1", function() return hl.sum(a, 1) end, "np.sum(a.astype(np.float64), axis=0)", {a}, {dtype = "float32", rtol = 1e-5, atol = 1e-4})
  case("sum [700,300] over axis 2", function() return hl.sum(a, 2) end, "np.sum(a.astype(np.float64), axis=1)", {a}, {dtype = "float32", rtol = 1e-5, atol = 1e-4})
  case("max [700,300] over axis 1", function() return hl.max(a, 1) end, "np.max(a, axis=0)", {a}, {dtype = "float32"})
  case("argmax [700,300] over axis 1", function() return hl.argmax(a, 1) end, "np.argmax(a, axis=0) + 1", {a}, {dtype = "int64"})
  case("argmin [700,300] over everything", function() return hl.argmin(a) end, "np.argmin(a) + 1", {a}, {dtype = "int64"})
  case("mean of a transposed [300,700] view over axis 2", function() return hl.mean(a.T, 2) end, "np.mean(a.T.astype(np.float64), axis=1)", {a},
       {dtype = "float32", rtol = 1e-5, atol = 1e-5})
  case("logsumexp [700,300] over axis 2", function() return hl.logsumexp(a, 2) end, "np.log(np.sum(np.exp(a.astype(np.float64)), axis=1))", {a},
       {dtype = "float32", rtol = 1e-5, atol = 1e-5})
  local i = np.rand({700, 300}, -1000, 1000, "int32")
  case("sum int32 [700,300] over everything", function() return hl.sum(i) end, "np.sum(a)", {i}, {dtype = "int32"})
  case("max int32 [700,300] over axis 2", function() return hl.max(i, 2) end, "np.max(a, axis=1)", {i}, {dtype = "int32"})
end)

-- Under jit, shapes are static and reductions of >= 32K elements read run in parallel; a reduction
-- over the innermost axis of a rank >= 3 result (its parallel loop fused from several axes) was
-- once summed once per outer iteration: 64 x the sum for [8,8,256,256]
suite("large reductions of rank 3 and 4 under jit", function(case)
  math.randomseed(14)
  for _, shape in ipairs({{3, 4, 5, 2000}, {6, 5, 4000}, {2, 3, 4, 5, 400}}) do
    local a = np.rand(shape, -2, 2)
    local name = table.concat(shape, ",")
    local function j(f, ...) local args = {...} return function() return hl.jit(f)(unpack(args)) end end
    case("sum [" .. name .. "] over the last axis", j(function(x) return hl.sum(x, -1) end, a),
         "np.sum(a.astype(np.float64), axis=-1)", {a}, {dtype = "float32", rtol = 1e-5, atol = 1e-4})
    case("mean [" .. name .. "] over the last axis, keepdims", j(function(x) return hl.mean(x, -1, true) end, a),
         "np.mean(a.astype(np.float64), axis=-1, keepdims=True)", {a}, {dtype = "float32", rtol = 1e-5, atol = 1e-5})
    case("max [" .. name .. "] over the last axis", j(function(x) return hl.max(x, -1) end, a), "np.max(a, axis=-1)", {a}, {dtype = "float32"})
    case("min [" .. name .. "] over the last two axes", j(function(x) return hl.min(x, {-2, -1}) end, a), "np.min(a, axis=(-2, -1))", {a}, {dtype = "float32"})
    case("sum [" .. name .. "] over the first axis", j(function(x) return hl.sum(x, 1) end, a),
         "np.sum(a.astype(np.float64), axis=0)", {a}, {dtype = "float32", rtol = 1e-5, atol = 1e-4})
    case("logsumexp [" .. name .. "] over the last axis", j(function(x) return hl.logsumexp(x, -1) end, a),
         "np.log(np.sum(np.exp(a.astype(np.float64)), axis=-1))", {a}, {dtype = "float32", rtol = 1e-5, atol = 1e-5})
    case("softmax [" .. name .. "] over the last axis", j(function(x) return hl.nn.softmax(x, -1) end, a),
         "np.exp(a - np.max(a, axis=-1, keepdims=True)) / np.sum(np.exp(a - np.max(a, axis=-1, keepdims=True)), axis=-1, keepdims=True)",
         {a}, {dtype = "float32", rtol = 1e-5, atol = 1e-6})
  end
  local a = np.rand({4, 5, 3000}, -2, 2, "float64")
  case("sum float64 [4,5,3000] over the last axis", function() return hl.jit(function(x) return hl.sum(x, -1) end)(a) end,
       "np.sum(a, axis=-1)", {a}, {dtype = "float64", rtol = 1e-12, atol = 1e-10})
end)

describe("a reduction read whole by an extern stage under jit", function()
  local hl = require "halua"
  -- the sum's accumulator is computed over exactly its shape for the stage: its update once ran
  -- over a 16K-element block past a 1,024-element buffer and crashed the process
  for _, n in ipairs({1024, 16384, 20000}) do
    it("sort(concatenate({sum(a, 1), b})) with " .. n .. " columns matches the eager result", function()
      local a = hl.random.normal(hl.random.key(n), {64, n})
      local b = hl.random.normal(hl.random.key(n + 1), {300})
      local function f(x, y) return hl.sort(hl.concatenate({hl.sum(x, 1), y}, 1)) end
      local got, want = hl.jit(f)(a, b), f(a, b)
      assert.are.same(want.shape, got.shape)
      assert(hl.max(hl.abs(got - want)):item() <= 1e-4)
    end)
  end
end)

-- Reductions that keep the innermost axis (columns) run in blocks of results (a quarter of a row,
-- 256 to 2048), each block's rows streamed through it, the blocks in parallel: blocks with a tail,
-- a middle axis with the outer axis fused into the parallel loop, several axes, and short rows
-- that are not blocked.
-- Each eagerly and under jit (constant extents there), against NumPy.
suite("column reductions, in blocks", function(case)
  local shapes = {
    {shape = {3, 1000}, axes = {1}},
    {shape = {700, 300}, axes = {1}},
    {shape = {5, 257}, axes = {1}},
    {shape = {9, 256}, axes = {1}},
    {shape = {6, 40, 520}, axes = {2}},
    {shape = {4, 5, 520}, axes = {1, 2}},
    {shape = {300, 2, 3}, axes = {1}},
    {shape = {3, 4100}, axes = {1}},
    {shape = {2, 70001}, axes = {1}},   -- (34 blocks, not whole vectors: the last ends within the spare elements)
  }
  for _, s in ipairs(shapes) do
    local x = np.rand(s.shape, -2, 2)
    local ax = #s.axes == 1 and s.axes[1] or s.axes
    for _, op in ipairs {"sum", "max", "min", "mean", "prod", "var", "any", "all"} do
      for _, dtype in ipairs {"float32", "float64", "int32"} do
        local a = dtype == "int32" and np.rand(s.shape, -3, 4, "int32") or x:astype(dtype)
        if op == "prod" then a = dtype == "int32" and np.rand(s.shape, 1, 3, "int32") or (x / 200 + 1):astype(dtype) end
        local want_dtype = ((op == "mean" or op == "var") and dtype == "int32") and "float32"
                           or ((op == "any" or op == "all") and "bool") or dtype
        local expr = string.format("np.%s(a, axis=%s)", op, np_axis(ax))
        local tol = {dtype = want_dtype, rtol = 1e-4, atol = 1e-4}
        local name = string.format("%s %s of %s over axis %s", op, dtype, table.concat(s.shape, "x"), axes_name(ax))
        case(name .. ", eager", function() return hl[op](a, ax) end, expr, {a}, tol)
        case(name .. ", under jit", function() return hl.jit(function(v) return hl[op](v, ax) end)(a) end, expr, {a}, tol)
      end
    end
  end
end)

-- The per-lane partial results of a reduction along rows are one vector, kept per row: rfactor
-- had given them the reduction's storage (the lanes a row's length apart, and the rows rounded
-- up past the whole shape), an 80 KB heap block per row of a [256, 1024] max.
describe("a row reduction's partial results", function()
  for _, op in ipairs {"max", "sum", "logsumexp"} do
    for _, n in ipairs {10, 1024} do
      it(op .. " over rows of 256x" .. n .. " keeps one vector of lanes per row", function()
        local x = hl.random.normal(hl.random.key(n), {256, n})
        local stmt = hl.jit(function(v) return hl[op](v, 2) end):lower(x):stmt()
        local seen = 0
        for dims in stmt:gmatch("allocate [%w_$.]*_intm[%w_$.]*%[%w+ %* ([^%]]*)%]") do
          seen = seen + 1
          local elems = 1
          for d in dims:gmatch("[^*]+") do elems = elems * assert(tonumber(d), dims) end
          assert.is_true(elems <= 64, dims)
        end
        assert.is_true(seen >= 1)
        assert.is_nil(stmt:find("_intm[%w_$.]*%[ramp%(%(int64%)0, %(int64%)%d%d+"))   -- (no lanes a row apart)
      end)
    end
  end
end)

-- Values a stage reads one row at a time (a softmax's maxima, exponentials and sums) are computed
-- per row of that stage, not stored whole (hl_row_groups.cpp): the same values as NumPy's, for
-- rows of every width against the vectors' (1, tails, several vectors), through reshapes, and where
-- a value cannot be computed per row (an output of its own, read transposed, read by two stages).
suite("values computed per row of their reader", function(case)
  local sm = "np.exp(a - a.max(-1, keepdims=True)) / np.exp(a - a.max(-1, keepdims=True)).sum(-1, keepdims=True)"
  local function softmax(v)
    local e = hl.exp(v - hl.max(v, -1, true))
    return e / hl.sum(e, -1, true)
  end
  local patterns = {
    {"softmax", softmax, sm},
    {"nn.softmax", function(v) return hl.nn.softmax(v, -1) end, sm},
    {"nn.log_softmax", function(v) return hl.nn.log_softmax(v, -1) end,
     "(a - a.max(-1, keepdims=True)) - np.log(np.exp(a - a.max(-1, keepdims=True)).sum(-1, keepdims=True))"},
    {"a normalised row", function(v)
       local c = v - hl.mean(v, -1, true)
       return c / hl.sqrt(hl.mean(c * c, -1, true) + 1e-5) end,
     "(a - a.mean(-1, keepdims=True)) / np.sqrt(((a - a.mean(-1, keepdims=True)) ** 2).mean(-1, keepdims=True) + 1e-5)"},
    {"a row's exponentials scaled by their sum and max", function(v)
       local e = hl.exp(v)
       return e * hl.sum(e, -1, true) + hl.max(e, -1, true) end,
     "np.exp(a) * np.exp(a).sum(-1, keepdims=True) + np.exp(a).max(-1, keepdims=True)"},
    {"softmax through a reshape", function(v)
       local s = v.shape
       return hl.reshape(softmax(hl.reshape(v, {-1, s[#s]})), s) * 2 end, "2 * (" .. sm .. ")"},
    {"a row's minimum and product", function(v)
       return (v - hl.min(v, -1, true)) * hl.prod(hl.cos(v) * 0.1 + 1, -1, true) end,
     "(a - a.min(-1, keepdims=True)) * (np.cos(a) * 0.1 + 1).prod(-1, keepdims=True)", {rtol = 2e-3, atol = 1e-5}},
    {"the exponentials as a second output", function(v)
       local e = hl.exp(v - hl.max(v, -1, true))
       return e / hl.sum(e, -1, true), e end, nil},
  }
  -- (40x1000 and 4x64x130: rows in parallel, one loop or three fused; the eager ops, which store
  -- every value, once per pattern as a check of the NumPy expression)
  for si, shape in ipairs {{5, 1}, {4, 17}, {3, 65}, {6, 1000}, {2, 4097}, {3, 4, 10}, {40, 1000}, {4, 64, 130}} do
    local x = np.rand(shape, -3, 3)
    for _, p in ipairs(patterns) do
      for _, dtype in ipairs(shape[2] == 1000 and {"float32", "float64"} or {"float32"}) do   -- (float64: rows of 1000)
        local a = x:astype(dtype)
        local name = string.format("%s, %s %s", p[1], dtype, table.concat(shape, "x"))
        local tol = {dtype = dtype, rtol = p[4] and p[4].rtol or 1e-5, atol = p[4] and p[4].atol or 1e-6}
        if p[3] then
          case(name .. ", under jit", function() return hl.jit(p[2])(a) end, p[3], {a}, tol)
          if si == 2 then case(name .. ", eager", function() return p[2](a) end, p[3], {a}, tol) end
        else
          local e = "np.exp(a - a.max(-1, keepdims=True))"
          case(name .. ", under jit", function() return select(1, hl.jit(p[2])(a)) end, sm, {a}, tol)
          case(name .. ", under jit (the second)", function() return select(2, hl.jit(p[2])(a)) end, e, {a}, tol)
        end
      end
    end
  end
  -- integer rows: the sums and maxima of int32 rows, exactly
  for _, shape in ipairs {{5, 3}, {6, 1000}, {40, 1000}} do
    local a = np.rand(shape, -9, 9, "int32")
    case("int32 rows' sums and maxima, " .. table.concat(shape, "x"), function()
      return hl.jit(function(v) return v * hl.sum(v, -1, true) - hl.max(v, -1, true) end)(a)
    end, "a * a.sum(-1, keepdims=True) - a.max(-1, keepdims=True)", {a}, {dtype = "int32"})
  end
  -- bools: a row's any and all
  for _, shape in ipairs {{5, 3}, {40, 1000}} do
    local a = np.rand(shape, -9, 9, "int32")
    case("a row's any and all, " .. table.concat(shape, "x"), function()
      return hl.jit(function(v) return hl.where(hl.any(hl.gt(v, 3), -1, true), v, -v) + hl.all(hl.gt(v, -8), -1, true):astype("int32") end)(a)
    end, "np.where((a > 3).any(-1, keepdims=True), a, -a) + (a > -8).all(-1, keepdims=True).astype('int32')", {a}, {dtype = "int32"})
  end
  -- read across rows: a square's exponentials and their transpose
  for _, n in ipairs {3, 17, 64} do
    local a = np.rand({n, n}, -3, 3)
    case("exponentials read transposed and per row, " .. n .. "x" .. n, function()
      return hl.jit(function(v) local e = hl.exp(v); return e / hl.sum(e, -1, true) + hl.transpose(e) end)(a)
    end, "np.exp(a) / np.exp(a).sum(-1, keepdims=True) + np.exp(a).T", {a}, {rtol = 1e-5, atol = 1e-6})
    case("row sums read by two stages, " .. n .. "x" .. n, function()
      local r1, r2 = hl.jit(function(v) local s = hl.sum(hl.exp(v), -1, true); return v * s, hl.exp(v) - s end)(a)
      return r1 + r2
    end, "a * np.exp(a).sum(-1, keepdims=True) + np.exp(a) - np.exp(a).sum(-1, keepdims=True)", {a}, {rtol = 1e-5, atol = 1e-3})   -- (terms of about 1000 cancel)
  end
end)

-- A reduction of rows longer than its reader's stays stored, with its own parallel loop: a row sum
-- kept as [1000, 1] is 1000 elements, too few for the reader's loop to run in parallel, and its
-- 4M additions had run in one thread.
describe("a row sum kept as a column", function()
  it("keeps its own parallel loop", function()
    local x = hl.random.uniform(hl.random.key(1), {1000, 4096})
    local f = hl.jit(function(v) return hl.sum(v, -1, true) * 2 end)
    assert.is_truthy(f:lower(x):stmt():find("par_for", 1, true))
    local want = hl.sum(x, -1, true) * 2
    assert.is_true(hl.max(hl.abs(f(x) - want)):item() < 1e-3)
  end)
end)

-- 2-byte floats per row: each value rounded to the dtype as eager ops round it, so a softmax
-- under jit equals the eager one (which stores every value whole) bit for bit
describe("a softmax of 2-byte floats, per row", function()
  for _, dtype in ipairs {"float16", "bfloat16"} do
    it(dtype .. " equals the eager ops'", function()
      local x = hl.random.normal(hl.random.key(11), {40, 1000}):astype(dtype)
      local got = hl.jit(function(v) return hl.nn.softmax(v, -1) end)(x)
      local want = hl.nn.softmax(x, -1)
      assert.are.equal(dtype, got.dtype)
      assert.are.equal(0, hl.sum(hl.ne(got, want)):item())
      assert.are.equal(40, math.floor(hl.sum(got:astype("float32")):item() + 0.5))   -- (each row sums to 1)
    end)
  end
end)

-- A softmax under jit stores no whole array of its exponentials: each row is computed into a
-- buffer of one row (rounded up to 64 elements), where a stored array of 64 MB had been written
-- and read again for a 4096x4096 softmax.
describe("a softmax's exponentials", function()
  for _, shape in ipairs {{64, 1000}, {4, 16, 100}} do
    it("are computed a row at a time, " .. table.concat(shape, "x"), function()
      local x = hl.random.normal(hl.random.key(7), shape)
      local stmt = hl.jit(function(v) return hl.nn.softmax(v, -1) end):lower(x):stmt()
      local biggest, seen = 0, 0
      for dims in stmt:gmatch("allocate [%w_$.]*%[%w+ %* ([^%]]*)%]") do
        seen = seen + 1
        local elems = 1
        for d in dims:gmatch("[^*]+") do elems = elems * assert(tonumber(d), dims) end
        biggest = math.max(biggest, elems)
      end
      assert.is_true(seen >= 2)
      assert.is_true(biggest <= 1024, "an allocation of " .. biggest .. " elements")
    end)
  end
end)
