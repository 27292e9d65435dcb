-- NumPy's functions (lua/halua/numpy.lua, numpy_shape.lua) against NumPy itself over shapes, axes
-- and dtypes, NaNs included; under jit against eager; gradients against central differences;
-- vmap against a Lua loop of the eager function; and the error messages' words.
local hl = require "halua"
local np = require "support.numpy"
local suite = require "support.suite"
local diff_check = require "support.diff_check"

math.randomseed(2222)

local function dims(s) return "[" .. table.concat(s, ",") .. "]" end
-- x with NaNs scattered through it
local function with_nans(x, p)
  local v = hl.reshape(x, {x.size}):totable()
  for i = 1, #v do if math.random() < (p or 0.2) then v[i] = 0 / 0 end end
  return hl.reshape(hl.array(v, x.dtype), x.shape)
end
local function pyaxis(axis, ndim)
  if axis == nil then return "None" end
  if type(axis) == "table" then
    local t = {}
    for i, a in ipairs(axis) do t[i] = tostring(pyaxis(a, ndim)) end
    return "(" .. table.concat(t, ",") .. ",)"
  end
  return axis < 0 and axis or axis - 1
end
local function pybool(b) return b and "True" or "False" end

suite("NaN-ignoring reductions against NumPy", function(case)
  local shapes = {{{7}, nil}, {{4, 5}, 2}, {{4, 5}, 1}, {{3, 4, 5}, {1, 3}}, {{3, 4, 5}, -1}, {{2, 3}, nil}}
  for _, sp in ipairs(shapes) do
    local shape, axis = sp[1], sp[2]
    for _, dtype in ipairs {"float32", "float64", "int32"} do
      local x = np.rand(shape, -5, 5, dtype)
      if dtype ~= "int32" then x = with_nans(x) end
      for _, keep in ipairs {false, true} do
        local name = string.format("%s %s axis %s keepdims %s", dtype, dims(shape), tostring(axis and dims(type(axis) == "table" and axis or {axis})), tostring(keep))
        local ax = pyaxis(axis, #shape)
        local kd = pybool(keep)
        local fdt = dtype == "int32" and "float32" or false
        case("nansum " .. name, function() return hl.nansum(x, axis, keep) end,
             string.format("np.nansum(a, axis=%s, keepdims=%s)", ax, kd), {x}, {dtype = dtype == "int32" and "int32" or nil})
        case("nanmean " .. name, function() return hl.nanmean(x, axis, keep) end,
             string.format("np.nanmean(a, axis=%s, keepdims=%s)", ax, kd), {x}, {dtype = fdt or nil, rtol = 1e-5})
        case("nanmax " .. name, function() return hl.nanmax(x, axis, keep) end,
             string.format("np.nanmax(a, axis=%s, keepdims=%s)", ax, kd), {x})
        case("nanmin " .. name, function() return hl.nanmin(x, axis, keep) end,
             string.format("np.nanmin(a, axis=%s, keepdims=%s)", ax, kd), {x})
        for _, ddof in ipairs {0, 1} do
          case("nanvar ddof " .. ddof .. " " .. name, function() return hl.nanvar(x, axis, keep, ddof) end,
               string.format("np.nanvar(a, axis=%s, keepdims=%s, ddof=%d)", ax, kd, ddof), {x}, {dtype = fdt or nil, rtol = 1e-4})
          case("nanstd ddof " .. ddof .. " " .. name, function() return hl.nanstd(x, axis, keep, ddof) end,
               string.format("np.nanstd(a, axis=%s, keepdims=%s, ddof=%d)", ax, kd, ddof), {x}, {dtype = fdt or nil, rtol = 1e-4})
        end
      end
    end
  end
  -- all-NaN slices give NaN (NumPy warns; its values are the reference) and ddof past the count NaN
  local allnan = hl.array({{0 / 0, 0 / 0}, {1, 0 / 0}}, "float64")
  case("nanmax of an all-NaN row is NaN", function() return hl.nanmax(allnan, 2) end, "np.nanmax(a, axis=1)", {allnan})
  case("nanmin of an all-NaN row is NaN", function() return hl.nanmin(allnan, 2) end, "np.nanmin(a, axis=1)", {allnan})
  case("nanmean of an all-NaN row is NaN", function() return hl.nanmean(allnan, 2) end, "np.nanmean(a, axis=1)", {allnan})
  case("nanvar with ddof >= count is NaN", function() return hl.nanvar(allnan, 2, false, 1) end, "np.nanvar(a, axis=1, ddof=1)", {allnan})
  case("nanvar with keepdims as the boolean second argument", function() return hl.nanvar(allnan, true) end,
       "np.nanvar(a, keepdims=True)", {allnan})
  case("nanvar with an options table", function() return hl.nanvar(allnan, {axis = 1, ddof = 1, keepdims = true}) end,
       "np.nanvar(a, axis=0, ddof=1, keepdims=True)", {allnan})
  case("nanstd with ddof after the axis", function() return hl.nanstd(allnan, 1, 1) end, "np.nanstd(a, axis=0, ddof=1)", {allnan})
  case("nanmean with an options table", function() return hl.nanmean(allnan, {axis = -1}) end, "np.nanmean(a, axis=-1)", {allnan})
  local inf = hl.array({1 / 0, -1 / 0, 0 / 0, 2})
  case("nanmax keeps infinities", function() return hl.nanmax(inf) end, "np.nanmax(a)", {inf})
  case("nanmin keeps infinities", function() return hl.nanmin(inf) end, "np.nanmin(a)", {inf})
  local x = with_nans(np.rand({3, 4}, -1, 1, "float64"))
  case("x:nansum(2) method", function() return x:nansum(2) end, "np.nansum(a, axis=1)", {x})
  case("x:nanstd() method", function() return x:nanstd() end, "np.nanstd(a)", {x})
end)

suite("median, quantile, percentile against NumPy", function(case)
  local shapes = {{{7}, nil}, {{6}, 1}, {{4, 6}, 2}, {{4, 6}, 1}, {{3, 4, 5}, {2, 3}}, {{3, 4, 5}, -1}, {{1}, nil}}
  for _, sp in ipairs(shapes) do
    local shape, axis = sp[1], sp[2]
    for _, dtype in ipairs {"float32", "float64", "int32"} do
      local x = np.rand(shape, -10, 10, dtype)
      local ax = pyaxis(axis, #shape)
      local name = string.format("%s %s axis %s", dtype, dims(shape), ax)
      local o = dtype == "int32" and {dtype = "float32", rtol = 1e-5} or {dtype = false}
      case("median " .. name, function() return hl.median(x, axis) end, string.format("np.median(a, axis=%s)", ax), {x}, o)
      case("median keepdims " .. name, function() return hl.median(x, axis, true) end,
           string.format("np.median(a, axis=%s, keepdims=True)", ax), {x}, o)
      for _, method in ipairs {"linear", "lower", "higher", "nearest", "midpoint"} do
        case("quantile " .. method .. " " .. name, function() return hl.quantile(x, 0.37, axis, false, method) end,
             string.format("np.quantile(a, 0.37, axis=%s, method=%q)", ax, method), {x}, o)
        local q = hl.array({0, 0.1, 0.25, 0.5, 0.9, 1}, "float64")
        case("quantile of an array q " .. method .. " " .. name, function() return hl.quantile(x, q, axis, true, method) end,
             string.format("np.quantile(a, b, axis=%s, method=%q, keepdims=True)", ax, method), {x, q}, o)
        case("percentile " .. method .. " " .. name, function() return hl.percentile(x, {5, 50, 75}, axis, {method = method}) end,
             string.format("np.percentile(a, [5, 50, 75], axis=%s, method=%q)", ax, method), {x}, o)
      end
    end
  end
  -- nearest rounds half to even: q*(n-1) = 1.5 and 2.5
  local e = hl.array({10, 20, 30, 40, 50, 60})
  case("nearest: q*(n-1) = 1.5 rounds to 2", function() return hl.quantile(e, 0.3, nil, false, "nearest") end,
       "np.quantile(a, 0.3, method='nearest')", {e}, {dtype = false})
  case("nearest: q*(n-1) = 2.5 rounds to 2", function() return hl.quantile(e, 0.5, nil, false, "nearest") end,
       "np.quantile(a, 0.5, method='nearest')", {e}, {dtype = false})
  -- 0.29 * 100 rounds to 28.999999999999996 in float64: NumPy divides q by 100 first, so "lower" picks 28
  local r101 = hl.arange(101, "float64")
  case("percentile divides q by 100 before scaling, as NumPy", function() return hl.percentile(r101, 29, nil, false, "lower") end,
       "np.percentile(a, 29, method='lower')", {r101})
  local nan = hl.array({{1, 0 / 0, 3}, {4, 5, 6}}, "float64")
  case("median of a row with NaN is NaN", function() return hl.median(nan, 2) end, "np.median(a, axis=1)", {nan})
  case("quantile of a row with NaN is NaN", function() return hl.quantile(nan, 0.2, 2) end, "np.quantile(a, 0.2, axis=1)", {nan})
  case("x:median(1) method", function() return nan:median(1) end, "np.median(a, axis=0)", {nan})
  -- median is the mean of the middle two (NumPy's), not the midpoint's lerp (NaN from inf - inf * 0.5)
  local infs = hl.array({{1, 1 / 0, 1 / 0, 0}, {-1 / 0, -1 / 0, 4, 5}, {-1 / 0, 1 / 0, 1 / 0, -1 / 0}}, "float32")
  case("median of rows whose middle values are infinite", function() return hl.median(infs, 2) end,
       "np.median(a, axis=1)", {infs})
  case("quantile options table", function() return hl.quantile(e, 0.3, {method = "higher", keepdims = true}) end,
       "np.quantile(a, 0.3, method='higher', keepdims=True)", {e}, {dtype = false})
end)

suite("diff, trapezoid, select against NumPy", function(case)
  for _, dtype in ipairs {"float32", "float64", "int32", "bool"} do
    local x = dtype == "bool" and np.rand({4, 6}, 0, 1, "bool") or np.rand({4, 6}, -5, 5, dtype)
    for _, sp in ipairs {{1, -1}, {2, -1}, {1, 1}, {3, 2}, {0, 1}, {5, 1}} do
      local n, axis = sp[1], sp[2]
      case(string.format("diff %s n %d axis %d", dtype, n, axis), function() return hl.diff(x, n, axis) end,
           string.format("np.diff(a, n=%d, axis=%d)", n, pyaxis(axis)), {x})
    end
  end
  local x = np.rand({3, 5}, -5, 5, "float64")
  local col = np.rand({3, 1}, -5, 5, "float64")
  case("diff prepend a number", function() return hl.diff(x, {prepend = 0}) end, "np.diff(a, prepend=0)", {x})
  case("diff append a column", function() return hl.diff(x, 1, 2, {append = col}) end, "np.diff(a, axis=1, append=b)", {x, col})
  case("diff prepend and append along axis 1", function() return hl.diff(x, 2, 1, {prepend = -1, append = 2}) end,
       "np.diff(a, n=2, axis=0, prepend=-1, append=2)", {x})
  case("diff n = 0 gives x, prepend and append left off (NumPy returns first)", function() return hl.diff(x, 0, 1, {prepend = -1, append = 2}) end,
       "np.diff(a, n=0, axis=0, prepend=-1, append=2)", {x})
  case("x:diff() method", function() return x:diff() end, "np.diff(a)", {x})
  local v = hl.array({1, 2, 4, 7, 11}, "int32")
  case("diff of int32 stays int32", function() return hl.diff(v) end, "np.diff(a)", {v})

  for _, dtype in ipairs {"float32", "float64"} do
    local y = np.rand({4, 6}, -3, 3, dtype)
    local xs = hl.cumsum(np.rand({6}, 0.1, 1, dtype))
    local xfull = hl.cumsum(np.rand({4, 6}, 0.1, 1, dtype), 2)
    case("trapezoid " .. dtype, function() return hl.trapezoid(y) end, "np.trapz(a)", {y})
    case("trapezoid dx axis 1 " .. dtype, function() return hl.trapezoid(y, 0.5, 1) end, "np.trapz(a, dx=0.5, axis=0)", {y})
    case("trapezoid 1-D x " .. dtype, function() return hl.trapezoid(y, xs) end, "np.trapz(a, x=b)", {y, xs}, {rtol = 1e-5})
    case("trapezoid x of y's shape " .. dtype, function() return hl.trapezoid(y, {x = xfull, axis = 2}) end,
         "np.trapz(a, x=b, axis=1)", {y, xfull}, {rtol = 1e-5})
  end
  local yi = hl.array({1, 2, 4}, "int32")
  case("trapezoid of int32 gives float32", function() return hl.trapezoid(yi) end, "np.trapz(a)", {yi}, {dtype = "float32"})

  local s = np.rand({3, 4}, -5, 5, "float64")
  case("select with default", function() return hl.select({hl.lt(s, -1), hl.gt(s, 1)}, {s, s * 10}, -7) end,
       "np.select([a < -1, a > 1], [a, a * 10], -7)", {s})
  case("select: the first true condition wins", function() return hl.select({hl.gt(s, 0), hl.gt(s, -2)}, {1, 2}) end,
       "np.select([a > 0, a > -2], [1, 2]).astype(np.float32)", {s}, {dtype = false})
  local si = hl.array({1, 5, 9}, "int32")
  case("select of int32 choices stays int32", function() return hl.select({hl.gt(si, 3)}, {si * 2}) end,
       "np.select([a > 3], [a * 2])", {si})
end)

suite("searchsorted, interp, histogram, bincount, unique against NumPy", function(case)
  for _, dtype in ipairs {"float32", "float64", "int32"} do
    local a = hl.sort(np.rand({9}, -5, 5, dtype))
    local v = np.rand({3, 4}, -6, 6, dtype)
    for _, side in ipairs {"left", "right"} do
      case("searchsorted " .. dtype .. " " .. side, function() return hl.searchsorted(a, v, side) end,
           string.format("np.searchsorted(a, b, side=%q) + 1", side), {a, v})
      case("searchsorted of a's own values " .. dtype .. " " .. side, function() return hl.searchsorted(a, a, side) end,
           string.format("np.searchsorted(a, a, side=%q) + 1", side), {a})
    end
  end
  local an = hl.array({-1, 0, 2, 0 / 0, 0 / 0}, "float64")
  local vn = hl.array({0 / 0, -2, 2, 3, 1 / 0}, "float64")
  case("searchsorted with NaN (sorted last), left", function() return hl.searchsorted(an, vn) end,
       "np.searchsorted(a, b) + 1", {an, vn})
  case("searchsorted with NaN, right", function() return hl.searchsorted(an, vn, {side = "right"}) end,
       "np.searchsorted(a, b, side='right') + 1", {an, vn})
  case("a:searchsorted(v) method and a scalar v", function() return an:searchsorted(2) end, "np.searchsorted(a, 2) + 1", {an})
  case("searchsorted into an empty array", function() return hl.searchsorted(hl.zeros({0}), hl.array({1, 2})) end,
       "np.searchsorted(np.zeros(0), [1, 2]) + 1", {})

  for _, dtype in ipairs {"float32", "float64"} do
    local xp = hl.cumsum(np.rand({7}, 0.2, 1, dtype)) - 2
    local fp = np.rand({7}, -3, 3, dtype)
    local x = np.rand({4, 5}, -3, 4, dtype)
    case("interp " .. dtype, function() return hl.interp(x, xp, fp) end, "np.interp(a, b, c)", {x, xp, fp}, {dtype = dtype, rtol = 1e-5})
    case("interp left right " .. dtype, function() return hl.interp(x, xp, fp, -9, 9) end, "np.interp(a, b, c, left=-9, right=9)",
         {x, xp, fp}, {dtype = dtype, rtol = 1e-5})
    case("interp at the points " .. dtype, function() return hl.interp(xp, xp, fp) end, "np.interp(a, a, b)", {xp, fp}, {dtype = dtype})
  end
  local xn = hl.array({0 / 0, 0.5, 2, 5}, "float64")
  case("interp of NaN is NaN", function() return hl.interp(xn, hl.array({0, 1, 2}, "float64"), hl.array({1, 3, 2}, "float64")) end,
       "np.interp(a, [0, 1, 2], [1, 3, 2])", {xn})
  case("interp with one point", function() return hl.interp(xn, hl.array({1}, "float64"), hl.array({7}, "float64"), {left = 0}) end,
       "np.interp(a, [1], [7], left=0)", {xn})

  for _, dtype in ipairs {"float32", "float64", "int32"} do
    local x = np.rand({50}, -4, 9, dtype)
    for _, bins in ipairs {1, 3, 10, 17} do
      local nm = dtype .. " bins " .. bins
      case("histogram counts " .. nm, function() return (hl.histogram(x, bins)) end, string.format("np.histogram(a, %d)[0]", bins), {x})
      case("histogram edges " .. nm, function() return select(2, hl.histogram(x, bins)) end, string.format("np.histogram(a, %d)[1]", bins),
           {x}, {dtype = dtype == "int32" and "float64" or nil})
      case("histogram range counts " .. nm, function() return (hl.histogram(x, bins, {-2, 5})) end,
           string.format("np.histogram(a, %d, range=(-2, 5))[0]", bins), {x})
    end
    local edges = hl.array({-3, -1, 0, 2.5, 8}, "float64")
    case("histogram with edges " .. dtype, function() return (hl.histogram(x, edges)) end, "np.histogram(a, b)[0]", {x, edges})
  end
  local xw = np.rand({40}, 0, 1, "float64")
  local w = np.rand({40}, -1, 2, "float64")
  case("histogram weights", function() return (hl.histogram(xw, 5, {weights = w})) end, "np.histogram(a, 5, weights=b)[0]", {xw, w})
  case("histogram density", function() return (hl.histogram(xw, {bins = 4, density = true})) end,
       "np.histogram(a, 4, density=True)[0]", {xw})
  local same = hl.array({3, 3, 3})
  case("histogram of equal values: range lo - 0.5 .. hi + 0.5", function() return select(2, hl.histogram(same, 2)) end,
       "np.histogram(a, 2)[1]", {same})
  local outside = hl.array({-1, 0, 0.5, 1, 2, 0 / 0})
  case("histogram with a range drops values outside it and NaN", function() return (hl.histogram(outside, 2, {0, 1})) end,
       "np.histogram(a, 2, range=(0, 1))[0]", {outside})

  for _, dtype in ipairs {"int32", "int64", "uint8"} do
    local x = np.rand({30}, 0, 8, dtype == "uint8" and "int32" or dtype):astype(dtype)
    case("bincount " .. dtype, function() return hl.bincount(x) end, "np.bincount(a)", {x})
    case("bincount minlength " .. dtype, function() return hl.bincount(x, nil, 12) end, "np.bincount(a, minlength=12)", {x})
    local w = np.rand({30}, -1, 1, "float64")
    case("bincount weights " .. dtype, function() return hl.bincount(x, w) end, "np.bincount(a, weights=b)", {x, w})
  end
  local b0 = hl.zeros({0}, "int32")
  case("bincount of nothing with minlength", function() return hl.bincount(b0, {minlength = 3}) end, "np.bincount(a, minlength=3)", {b0})

  for _, dtype in ipairs {"float32", "float64", "int32", "bool"} do
    local x = dtype == "bool" and np.rand({3, 4}, 0, 1, "bool") or np.rand({3, 4}, -3, 3, dtype)
    if dtype:match("float") then x = hl.floor(x) end
    case("unique values " .. dtype, function() return hl.unique(x) end, "np.unique(a)", {x})
    case("unique index " .. dtype, function() return select(2, hl.unique(x, {return_index = true})) end,
         "np.unique(a, return_index=True)[1] + 1", {x}, {dtype = "int64"})
    case("unique inverse " .. dtype, function() return select(2, hl.unique(x, {return_inverse = true})) end,
         "np.unique(a, return_inverse=True)[1].reshape(-1) + 1", {x}, {dtype = "int64"})
    case("unique counts " .. dtype, function() return select(2, hl.unique(x, {return_counts = true})) end,
         "np.unique(a, return_counts=True)[1]", {x}, {dtype = "int64"})
  end
  local un = hl.array({2, 0 / 0, 1, 0 / 0, 2}, "float64")
  case("unique: NaNs are one value, last", function() return hl.unique(un) end, "np.unique(a)", {un})
  case("unique counts with NaN", function() return select(2, hl.unique(un, {return_counts = true})) end,
       "np.unique(a, return_counts=True)[1]", {un}, {dtype = "int64"})
end)

suite("pad modes, roll, rot90, meshgrid, tril, triu against NumPy", function(case)
  for _, dtype in ipairs {"float32", "float64", "int32"} do
    local x = np.rand({3, 4}, -5, 5, dtype)
    for _, mode in ipairs {"edge", "reflect", "symmetric", "wrap"} do
      for _, w in ipairs {{1, "1"}, {{2, 0}, "(2, 0)"}, {{{0, 1}, {3, 2}}, "((0, 1), (3, 2))"}, {{{7, 9}, {0, 11}}, "((7, 9), (0, 11))"}} do
        case(string.format("pad %s %s %s", mode, dtype, w[2]), function() return hl.pad(x, w[1], mode) end,
             string.format("np.pad(a, %s, mode=%q)", w[2], mode), {x})
      end
    end
    case("pad constant with a value " .. dtype, function() return hl.pad(x, {1, 2}, {mode = "constant", value = 3}) end,
         "np.pad(a, (1, 2), constant_values=3)", {x})
    case("pad constant as before " .. dtype, function() return hl.pad(x, {{0, 1}, {2, 0}}, 7) end,
         "np.pad(a, ((0, 1), (2, 0)), constant_values=7)", {x})
  end
  local one = hl.array({{5}, {6}})
  case("pad reflect of a length-1 axis repeats it", function() return hl.pad(one, {{1, 1}, {2, 3}}, "reflect") end,
       "np.pad(a, ((1, 1), (2, 3)), mode='reflect')", {one})
  case("x:pad method with a mode", function() return one:pad(2, "wrap") end, "np.pad(a, 2, mode='wrap')", {one})

  local x = np.rand({3, 4, 5}, -5, 5, "float64")
  for _, sp in ipairs {{2, nil, "None"}, {-7, nil, "None"}, {1, 1, "0"}, {-2, 3, "2"}, {{1, 2}, {1, 3}, "(0, 2)"},
                       {{1, 1}, {2, 2}, "(1, 1)"}, {13, -1, "-1"}, {0, 2, "1"}} do
    local shift = sp[1]
    local sh = type(shift) == "table" and "(" .. table.concat(shift, ",") .. ")" or tostring(shift)
    case("roll " .. sh .. " axis " .. sp[3], function() return hl.roll(x, shift, sp[2]) end,
         string.format("np.roll(a, %s, axis=%s)", sh, sp[3]), {x})
  end
  local xi = np.rand({4, 3}, -5, 5, "int32")
  case("x:roll on int32", function() return xi:roll(1, 2) end, "np.roll(a, 1, axis=1)", {xi})
  for k = -1, 4 do
    case("rot90 k " .. k, function() return hl.rot90(x, k) end, string.format("np.rot90(a, %d)", k), {x})
    case("rot90 k " .. k .. " axes {3, 1}", function() return hl.rot90(x, k, {3, 1}) end, string.format("np.rot90(a, %d, axes=(2, 0))", k), {x})
  end
  case("x:rot90 on int32", function() return xi:rot90() end, "np.rot90(a)", {xi})

  local a, b, c = np.rand({3}, 0, 1, "float64"), np.rand({4}, 0, 1, "float64"), np.rand({2}, 0, 1, "float64")
  for _, idx in ipairs {"xy", "ij"} do
    for k = 1, 3 do
      case("meshgrid 3 inputs " .. idx .. " result " .. k, function() return (select(k, hl.meshgrid(a, b, c, {indexing = idx}))) end,
           string.format("np.meshgrid(a, b, c, indexing=%q)[%d]", idx, k - 1), {a, b, c})
    end
  end
  case("meshgrid default xy, second", function() return (select(2, hl.meshgrid(a, b))) end, "np.meshgrid(a, b)[1]", {a, b})
  case("meshgrid of a list", function() return (select(3, hl.meshgrid({a, b, c}, {indexing = "ij"}))) end,
       "np.meshgrid(a, b, c, indexing='ij')[2]", {a, b, c})
  case("meshgrid one input", function() return (hl.meshgrid(a)) end, "np.meshgrid(a)[0]", {a})

  for _, dtype in ipairs {"float32", "int32", "bool"} do
    local m = dtype == "bool" and np.rand({2, 4, 5}, 0, 1, "bool") or np.rand({2, 4, 5}, -5, 5, dtype)
    for _, k in ipairs {0, 1, -2, 7, -7} do
      case(string.format("tril %s k %d", dtype, k), function() return hl.tril(m, k) end, string.format("np.tril(a, %d)", k), {m})
      case(string.format("triu %s k %d", dtype, k), function() return hl.triu(m, k) end, string.format("np.triu(a, %d)", k), {m})
    end
  end
  local v = hl.array({1, 2, 3})
  case("tril of a 1-D array is a square", function() return hl.tril(v) end, "np.tril(a)", {v})
  case("x:triu(1) method", function() return x:triu(1) end, "np.triu(a, 1)", {x})
end)

suite("tensordot, kron, cross, convolve, correlate against NumPy", function(case)
  for _, dtype in ipairs {"float32", "float64", "int32"} do
    local a = np.rand({2, 3, 4}, -3, 3, dtype)
    local b = np.rand({3, 4, 5}, -3, 3, dtype)
    local c = np.rand({4, 2}, -3, 3, dtype)
    local o = {rtol = 1e-5, atol = 1e-5}
    case("tensordot default axes " .. dtype, function() return hl.tensordot(a, b) end, "np.tensordot(a, b)", {a, b}, o)
    case("tensordot axes 1 " .. dtype, function() return hl.tensordot(a, c, 1) end, "np.tensordot(a, b, 1)", {a, c}, o)
    case("tensordot axes 0 (outer) " .. dtype, function() return hl.tensordot(c, c, 0) end, "np.tensordot(a, a, 0)", {c}, o)
    case("tensordot pairs " .. dtype, function() return hl.tensordot(a, c, {{3, 1}, {1, 2}}) end,
         "np.tensordot(a, b, ((2, 0), (0, 1)))", {a, c}, o)
    case("tensordot negative axes " .. dtype, function() return hl.tensordot(a, b, {{-1}, {2}}) end,
         "np.tensordot(a, b, ((-1,), (1,)))", {a, b}, o)
    local k1, k2 = np.rand({2, 3}, -3, 3, dtype), np.rand({3, 2}, -3, 3, dtype)
    case("kron 2-D " .. dtype, function() return hl.kron(k1, k2) end, "np.kron(a, b)", {k1, k2})
    local k3 = np.rand({4}, -3, 3, dtype)
    case("kron 1-D with 2-D " .. dtype, function() return hl.kron(k3, k1) end, "np.kron(a, b)", {k3, k1})
    local u, w = np.rand({5, 3}, -3, 3, dtype), np.rand({5, 3}, -3, 3, dtype)
    case("cross 3-vectors " .. dtype, function() return hl.cross(u, w) end, "np.cross(a, b)", {u, w}, o)
    local ut, wt = np.rand({3, 4}, -3, 3, dtype), np.rand({3, 1}, -3, 3, dtype)
    case("cross along axis 1, broadcast " .. dtype, function() return hl.cross(ut, wt, 1) end, "np.cross(a, b, axis=0)", {ut, wt}, o)
    local p2, q2 = np.rand({4, 2}, -3, 3, dtype), np.rand({4, 2}, -3, 3, dtype)
    local c3, d3 = np.rand({2, 3, 4}, -3, 3, dtype), np.rand({2, 3, 4}, -3, 3, dtype)
    case("cross along a middle axis " .. dtype, function() return hl.cross(c3, d3, 2) end, "np.cross(a, b, axis=1)", {c3, d3}, o)
    case("cross 2- with 3-vectors along a middle axis " .. dtype, function() return hl.cross(c3[{{}, {1, 2}}], d3, -2) end,
         "np.cross(a[:, :2], b, axis=-2)", {c3, d3}, o)
    case("cross 2-vectors give z " .. dtype, function() return hl.cross(p2, q2) end, "np.cross(a, b)", {p2, q2}, o)
    case("cross 2- with 3-vectors " .. dtype, function() return hl.cross(p2, w[{{1, 4}}]) end, "np.cross(a, b[:4])", {p2, w}, o)
    case("cross 3- with 2-vectors " .. dtype, function() return hl.cross(w[{{1, 4}}], p2) end, "np.cross(b[:4], a)", {p2, w}, o)
    for _, lens in ipairs {{7, 3}, {3, 7}, {5, 5}, {6, 1}, {1, 1}, {8, 4}, {130, 60}, {60, 61}} do
      local s, t = np.rand({lens[1]}, -3, 3, dtype), np.rand({lens[2]}, -3, 3, dtype)
      for _, mode in ipairs {"full", "same", "valid"} do
        local nm = string.format("%s %d,%d %s", dtype, lens[1], lens[2], mode)
        case("convolve " .. nm, function() return hl.convolve(s, t, mode) end, string.format("np.convolve(a, b, %q)", mode), {s, t}, o)
        case("correlate " .. nm, function() return hl.correlate(s, t, mode) end, string.format("np.correlate(a, b, %q)", mode), {s, t}, o)
      end
      case("convolve default full " .. dtype, function() return hl.convolve(s, t) end, "np.convolve(a, b)", {s, t}, o)
      case("correlate default valid " .. dtype, function() return hl.correlate(s, t) end, "np.correlate(a, b)", {s, t}, o)
    end
  end
end)

-- the maximum absolute difference between two arrays' values (NaN == NaN)
local function max_diff(a, b)
  assert.are.same(a.shape, b.shape)
  assert.are.equal(a.dtype, b.dtype)
  local x, y = diff_check.flat(a), diff_check.flat(b)
  local m = 0
  for i = 1, #x do
    local p, q = x[i], y[i]
    if type(p) == "boolean" then p, q = p and 1 or 0, q and 1 or 0 end
    if not (p ~= p and q ~= q) then
      if p ~= p or q ~= q then return math.huge end
      if p ~= q then m = math.max(m, math.abs(p - q) / (1 + math.abs(q))) end
    end
  end
  return m
end

-- each case: name, a function of arrays (returning one array), its arguments
local x46 = with_nans(np.rand({4, 6}, -3, 3, "float64"), 0.1)
local y46 = np.rand({4, 6}, -3, 3, "float64")
local ints = np.rand({20}, 0, 6, "int32")
local sorted = hl.sort(np.rand({8}, -3, 3, "float64"))
local xp, fp = hl.cumsum(np.rand({6}, 0.2, 1, "float64")), np.rand({6}, -1, 1, "float64")
local traced_cases = {
  {"nansum", function(x) return hl.nansum(x, 2) end, {x46}},
  {"nanmean", function(x) return hl.nanmean(x, 1, true) end, {x46}},
  {"nanmax", function(x) return hl.nanmax(x, 2) end, {x46}},
  {"nanmin", function(x) return hl.nanmin(x) end, {x46}},
  {"nanvar", function(x) return hl.nanvar(x, 2, false, 1) end, {x46}},
  {"nanstd", function(x) return hl.nanstd(x, 1) end, {x46}},
  {"median", function(x) return hl.median(x, 2) end, {y46}},
  {"quantile", function(x) return hl.quantile(x, hl.array({0.2, 0.7}, "float64"), 1) end, {y46}},
  {"quantile nearest", function(x) return hl.quantile(x, 0.3, 2, false, "nearest") end, {y46}},
  {"percentile", function(x) return hl.percentile(x, 40, nil, true) end, {y46}},
  {"diff", function(x) return hl.diff(x, 2, 1, {append = 1}) end, {y46}},
  {"trapezoid", function(y) return hl.trapezoid(y, xp) end, {y46}},
  {"select", function(x, y) return hl.select({hl.gt(x, 0), hl.lt(y, 0)}, {x, y}, 5) end, {y46, x46}},
  {"searchsorted", function(a, v) return hl.searchsorted(a, v, "right") end, {sorted, y46}},
  {"interp", function(x) return hl.interp(x, xp, fp) end, {y46}},
  {"histogram", function(x) return (hl.histogram(x, 5)) end, {y46}},
  {"histogram edges", function(x) return select(2, hl.histogram(x, 5)) end, {y46}},
  {"bincount", function(x) return hl.bincount(x, {length = 6}) end, {ints}},
  {"unique", function(x) return hl.unique(x, {size = 8, fill_value = -1}) end, {ints}},
  {"unique inverse", function(x) return select(2, hl.unique(x, {size = 8, return_inverse = true})) end, {ints}},
  {"pad reflect", function(x) return hl.pad(x, {{1, 2}, {3, 0}}, "reflect") end, {y46}},
  {"pad wrap", function(x) return hl.pad(x, 7, "wrap") end, {y46}},
  {"roll", function(x) return hl.roll(x, {1, -2}, {1, 2}) end, {y46}},
  {"rot90", function(x) return hl.rot90(x, 3) end, {y46}},
  {"meshgrid", function(a, b) return (select(2, hl.meshgrid(a, b))) end, {sorted, xp}},
  {"tril", function(x) return hl.tril(x, 1) end, {y46}},
  {"triu", function(x) return hl.triu(x, -1) end, {y46}},
  {"tensordot", function(a, b) return hl.tensordot(a, b, {{1}, {1}}) end, {y46, y46}},
  {"kron", function(a, b) return hl.kron(a, b) end, {xp, y46}},
  {"cross", function(a, b) return hl.cross(a, b, 1) end, {y46[{{1, 3}}], y46[{{2, 4}}]}},
  {"convolve", function(a, b) return hl.convolve(a, b, "same") end, {sorted, xp}},
  {"convolve long", function(a, b) return hl.convolve(a, b) end, {np.rand({70}, -1, 1, "float64"), np.rand({55}, -1, 1, "float64")}},
  {"correlate", function(a, b) return hl.correlate(a, b, "full") end, {sorted, xp}},
}

describe("NumPy functions under jit", function()
  for _, c in ipairs(traced_cases) do
    it(c[1] .. " equals eager", function()
      local want = c[2](unpack(c[3]))
      local got = hl.jit(c[2])(unpack(c[3]))
      assert.is_true(max_diff(got, want) <= 1e-12, c[1] .. ": jit differs from eager")
    end)
  end
end)

describe("NumPy functions under vmap", function()
  -- each argument gets a leading batch axis of 3 (the same example shifted); the vmapped result
  -- equals the eager function per example, stacked
  for _, c in ipairs(traced_cases) do
    it(c[1] .. " equals a loop", function()
      local args, per = {}, {{}, {}, {}}
      for i, a in ipairs(c[3]) do
        local parts = {}
        for b = 1, 3 do
          local shifted = a
          if a.dtype:match("float") and not (c[1] == "searchsorted" and i == 1) and not (c[1]:match("^meshgrid") or c[1] == "convolve" or c[1] == "correlate") then
            shifted = a + (b - 1) * 0.25
          elseif a.dtype == "int32" then
            shifted = hl.clip(a + (b - 1), 0, 5)
          end
          per[b][i] = shifted
          parts[b] = shifted
        end
        args[i] = hl.stack(parts)
      end
      local got = hl.vmap(c[2])(unpack(args))
      local rows = {}
      for b = 1, 3 do rows[b] = c[2](unpack(per[b])) end
      assert.is_true(max_diff(got, hl.stack(rows)) <= 1e-12, c[1] .. ": vmap differs from the loop")
    end)
  end
end)

describe("NumPy functions' gradients against central differences", function()
  local function check(name, f, x, tol)
    it(name, function()
      local w = np.rand(f(x).shape, -1, 1, "float64")
      local loss = function(v) return hl.sum(f(v) * w) end
      local got = hl.grad(loss)(x)
      diff_check.close(got, diff_check.numeric(loss, x), tol or 1e-6, name)
    end)
  end
  local x = np.rand({4, 5}, -2, 2, "float64")
  local xn = with_nans(x, 0.15)
  check("nansum", function(v) return hl.nansum(v, 2) end, xn)
  check("nanmean", function(v) return hl.nanmean(v, 1) end, xn)
  check("nanmax", function(v) return hl.nanmax(v, 2) end, xn)
  check("nanmin", function(v) return hl.nanmin(v) end, xn)
  check("nanvar ddof 1", function(v) return hl.nanvar(v, 2, true, 1) end, xn)
  -- at least two numbers per column: the root of a zero variance has no derivative
  local xs = hl.array({{1.5, 0 / 0, -0.5, 2}, {0 / 0, 0.25, 1, -1}, {-2, 1.25, 0 / 0, 0.5}}, "float64")
  check("nanstd", function(v) return hl.nanstd(v, 1) end, xs)
  check("median", function(v) return hl.median(v, 2) end, x)
  check("median of an even count", function(v) return hl.median(v, 1) end, x)
  check("quantile linear", function(v) return hl.quantile(v, hl.array({0.1, 0.65}, "float64"), 2) end, x)
  check("percentile midpoint", function(v) return hl.percentile(v, 30, 1, false, "midpoint") end, x)
  check("diff", function(v) return hl.diff(v, 2, 2, {prepend = 1}) end, x)
  check("roll", function(v) return hl.roll(v, 3) end, x)
  check("rot90", function(v) return hl.rot90(v) end, x)
  for _, mode in ipairs {"constant", "edge", "reflect", "symmetric", "wrap"} do
    check("pad " .. mode, function(v) return hl.pad(v, {{2, 6}, {1, 0}}, mode) end, x)
  end
  check("tril", function(v) return hl.tril(v, 1) end, x)
  check("triu", function(v) return hl.triu(v) end, x)
  local b = np.rand({5, 3}, -2, 2, "float64")
  check("tensordot (first argument)", function(v) return hl.tensordot(v, b, 1) end, x)
  check("tensordot (second argument)", function(v) return hl.tensordot(x, v, {{2}, {1}}) end, b)
  check("kron", function(v) return hl.kron(v, b) end, x[{{1, 2}}])
  local u3 = np.rand({4, 3}, -2, 2, "float64")
  check("cross", function(v) return hl.cross(v, u3) end, np.rand({4, 3}, -2, 2, "float64"))
  check("cross with 2-vectors", function(v) return hl.cross(v, u3[{{}, {1, 2}}]) end, np.rand({4, 2}, -2, 2, "float64"))
  local xp2 = hl.array({-3, -1, 0, 0.5, 2, 3}, "float64")
  local fp2 = np.rand({6}, -2, 2, "float64")
  check("interp in x", function(v) return hl.interp(v, xp2, fp2) end, np.rand({7}, -2.9, 2.9, "float64"))
  check("interp in fp", function(v) return hl.interp(hl.array({-2, 0.1, 1.7}, "float64"), xp2, v) end, fp2)
  check("interp in xp", function(v) return hl.interp(hl.array({-2, 0.1, 1.7}, "float64"), v, fp2) end, xp2)
  local k = np.rand({3}, -2, 2, "float64")
  for _, mode in ipairs {"full", "same", "valid"} do
    check("convolve " .. mode, function(v) return hl.convolve(v, k, mode) end, np.rand({7}, -2, 2, "float64"))
    check("correlate " .. mode .. " (second argument)", function(v) return hl.correlate(x[1], v, mode) end, k)
  end
  -- a kernel past the short-kernel path: the windows-times-kernel form
  local long = np.rand({50}, -1, 1, "float64")
  check("convolve with a long kernel (first argument)", function(v) return hl.convolve(v, long, "same") end, np.rand({9}, -2, 2, "float64"))
  local signal = np.rand({60}, -1, 1, "float64")
  check("correlate with a long kernel (second argument)", function(v) return hl.correlate(signal, v) end, long)
  it("compose: jit of grad and vmap of grad equal the eager gradients", function()
    local f = function(v) return hl.sum(hl.interp(v, xp2, fp2) * hl.median(v) + hl.nanmax(hl.pad(v, 2, "reflect"))) end
    local vs = np.rand({3, 5}, -2.5, 2.5, "float64")
    local rows = {}
    for b = 1, 3 do rows[b] = hl.grad(f)(vs[b]) end
    local want = hl.stack(rows)
    diff_check.close(hl.vmap(hl.grad(f))(vs), diff_check.flat(want), 1e-12, "vmap(grad)")
    diff_check.close(hl.jit(hl.grad(f))(vs[2]), diff_check.flat(rows[2]), 1e-12, "jit(grad)")
    diff_check.close(rows[2], diff_check.numeric(f, vs[2]), 1e-6, "grad against differences")
  end)
  check("trapezoid in y", function(v) return hl.trapezoid(v, xp2[{{1, 5}}]) end, x)
  check("trapezoid in x", function(v) return hl.trapezoid(x, v, {axis = 2}) end, xp2[{{1, 5}}])
end)

describe("NumPy functions' errors", function()
  local function fails(pattern, f, ...)
    local ok, err = pcall(f, ...)
    assert.is_false(ok, "expected an error matching " .. pattern)
    assert.truthy(tostring(err):find(pattern), "message: " .. tostring(err))
  end
  it("name the function, the problem and what to do", function()
    local x = hl.ones({3, 4})
    fails("^halua: nanmean: axis 3 is out of range", hl.nanmean, x, 3)
    fails("^halua: nanvar: ddof must be a number", hl.nanvar, x, 1, false, "1")
    fails("^halua: nansum: unknown option 'ddof' %(the options are axis, keepdims%)", hl.nansum, x, {ddof = 1})
    fails("^halua: nanstd: unknown option 'dof' %(the options are axis, keepdims, ddof%)", hl.nanstd, x, {dof = 1})
    fails("^halua: quantile: q must be in %[0, 1%], got 1.5", hl.quantile, x, 1.5)
    fails("^halua: percentile: q must be in %[0, 100%], got %-1", hl.percentile, x, {-1, 50})
    fails("^halua: quantile: unknown method 'cubic' %(the methods are linear, lower, higher, nearest, midpoint%)",
          hl.quantile, x, 0.5, 1, false, "cubic")
    fails("^halua: quantile: unknown option 'interpolation' %(the options are axis, keepdims, method%)",
          hl.quantile, x, 0.5, {interpolation = "lower"})
    fails("^halua: median: cannot take a quantile over an empty axis", hl.median, hl.zeros({0, 3}), 1)
    fails("^halua: diff: n must be a non%-negative integer", hl.diff, x, -1)
    fails("^halua: diff: unknown option 'prepand'", hl.diff, x, {prepand = 0})
    fails("^halua: diff: needs at least one axis", hl.diff, hl.array(1))
    fails("^halua: trapezoid: x has 3 coordinates, y's axis 2 has 4", hl.trapezoid, x, hl.array({1, 2, 3}))
    fails("^halua: select: condlist has 2 entries and choicelist 1", hl.select, {hl.gt(x, 0), hl.gt(x, 1)}, {x})
    fails("^halua: select: condition 1 is float32; conditions must be bool", hl.select, {x}, {x})
    fails("^halua: searchsorted: a must be 1%-D", hl.searchsorted, x, 1)
    fails("^halua: searchsorted: side must be \"left\" or \"right\"", hl.searchsorted, hl.ones(3), 1, "middle")
    fails("^halua: interp: xp and fp must be 1%-D of one length", hl.interp, x, hl.ones(3), hl.ones(4))
    fails("^halua: histogram: bins must be a positive integer", hl.histogram, x, 0)
    fails("^halua: histogram: range {2, 1}: lo must not exceed hi", hl.histogram, x, 3, {2, 1})
    fails("^halua: histogram: the data's range %[nan, nan%] is not finite", hl.histogram, hl.array({0 / 0}))
    fails("^halua: histogram: the edges must increase monotonically", hl.histogram, x, hl.array({1, 0, 2}))
    fails("^halua: histogram: unknown option 'normed'", hl.histogram, x, 3, {normed = true})
    fails("^halua: bincount: x must be non%-negative, got %-2", hl.bincount, hl.array({1, -2}, "int32"))
    fails("^halua: bincount: x must be integers, got float32", hl.bincount, hl.array({1, 2}))
    fails("^halua: bincount: x must be 1%-D", hl.bincount, hl.ones({2, 2}, "int32"))
    fails("^halua: bincount: on traced values %(under jit or vmap%) the result's length must be static: pass {length = n}",
          hl.jit(function(v) return hl.bincount(v) end), hl.array({1, 2}, "int32"))
    fails("^halua: unique: on traced values %(under jit or vmap%) the number of distinct values must be static: pass {size = n",
          hl.jit(function(v) return hl.unique(v) end), hl.array({1, 2}))
    fails("^halua: unique: on traced values %(under jit or vmap%)", hl.vmap(function(v) return hl.unique(v) end), hl.ones({2, 2}))
    fails("^halua: select: condlist is empty", hl.select, {}, {}, 3)
    fails("^halua: unique: unknown option 'sorted'", hl.unique, x, {sorted = true})
    fails("^halua: pad: unknown mode 'mirror' %(the modes are constant, edge, reflect, symmetric, wrap%)", hl.pad, x, 1, "mirror")
    fails("^halua: pad: a value is only used by mode constant, not edge", hl.pad, x, 1, {mode = "edge", value = 2})
    fails("^halua: pad: mode reflect cannot extend axis 1 of length 0", hl.pad, hl.zeros({0, 2}), 1, "reflect")
    fails("^halua: pad: unknown option 'constant_values'", hl.pad, x, 1, {constant_values = 2})
    fails("^halua: roll: 2 shifts for 3 axes", hl.roll, hl.ones({2, 2, 2}), {1, 2}, {1, 2, 3})
    fails("^halua: roll: axis 3 is out of range", hl.roll, x, 1, 3)
    fails("^halua: rot90: the axes must differ", hl.rot90, x, 1, {1, 1})
    fails("^halua: rot90: needs at least 2 axes", hl.rot90, hl.ones(3))
    fails("^halua: meshgrid: indexing must be \"xy\" or \"ij\"", hl.meshgrid, hl.ones(2), {indexing = "yx"})
    fails("^halua: tril: k must be an integer", hl.tril, x, 0.5)
    fails("^halua: tensordot: a's axis 2 has 4 elements and b's axis 1 has 3", hl.tensordot, x, hl.ones({3, 2}), 1)
    fails("^halua: tensordot: axes 3 must be a count 0..2", hl.tensordot, x, x, 3)
    fails("^halua: cross: the vectors along axis %-1 must have 2 or 3 components, got 4 and 4", hl.cross, x, x)
    fails("^halua: convolve: mode must be \"full\", \"same\" or \"valid\"", hl.convolve, hl.ones(3), hl.ones(2), "wide")
    fails("^halua: correlate: a and v must not be empty", hl.correlate, hl.ones(3), hl.zeros({0}))
    fails("^halua: convolve: a and v must be 1%-D", hl.convolve, x, hl.ones(2))
  end)
  it("unique and bincount work under jit with a static size", function()
    local f = hl.jit(function(v) return hl.unique(v, {size = 5, return_counts = true}) end)
    local vals, counts = f(hl.array({4, 1, 4, 4}, "int32"))
    assert.are.same({1, 4, 1, 1, 1}, vals:totable())   -- padded with the smallest value
    assert.are.same({1, 3, 0, 0, 0}, counts:totable())
    local g = hl.jit(function(v) return hl.bincount(v, {length = 3}) end)
    assert.are.same({1, 0, 2}, g(hl.array({0, 2, 2, 5}, "int32")):totable())   -- 5 is past the length: dropped
  end)
end)

describe("interp of NaN", function()
  it("a NaN x gives NaN, also on a flat segment (NumPy's answer)", function()
    local r = hl.interp(hl.array({0 / 0, 0.5, 1.5}), {0, 1, 2}, {1, 1, 3}):totable()
    assert(r[1] ~= r[1], "NaN expected, got " .. tostring(r[1]))
    assert.are.same({1, 2}, {r[2], r[3]})
    local j = hl.jit(function(x) return hl.interp(x, hl.array({0, 1, 2}), hl.array({1, 1, 1})) end)(hl.array({0 / 0, 0.5})):totable()
    assert(j[1] ~= j[1] and j[2] == 1)
  end)
end)
