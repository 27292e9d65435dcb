-- Elementwise primitives against NumPy: every op, several shapes (0-d, zero-size, broadcasting)
-- and dtypes, special values, dtype promotion and weakly typed Lua numbers.
local hl = require "halua"
local np = require "support.numpy"

math.randomseed(11)

local suite = require "support.suite"

local shapes = {{}, {7}, {3, 5}, {2, 3, 4}, {0, 3}}
local function shape_name(s) return "[" .. table.concat(s, ",") .. "]" end

local unary = {
  -- name, NumPy expression, input range
  {"neg", "np.negative(a)", -3, 3}, {"abs", "np.abs(a)", -3, 3}, {"sign", "np.sign(a)", -3, 3},
  {"square", "np.square(a)", -3, 3}, {"floor", "np.floor(a)", -3, 3}, {"ceil", "np.ceil(a)", -3, 3},
  {"round", "np.round(a)", -3, 3}, {"reciprocal", "np.reciprocal(a)", 0.2, 3},
  {"exp", "np.exp(a)", -5, 5}, {"expm1", "np.expm1(a)", -2, 2}, {"log", "np.log(a)", 0.01, 5},
  {"log1p", "np.log1p(a)", -0.9, 5}, {"sqrt", "np.sqrt(a)", 0, 5}, {"rsqrt", "1 / np.sqrt(a)", 0.05, 5},
  {"sin", "np.sin(a)", -6, 6}, {"cos", "np.cos(a)", -6, 6}, {"tan", "np.tan(a)", -1.4, 1.4},
  {"asin", "np.arcsin(a)", -1, 1}, {"acos", "np.arccos(a)", -1, 1}, {"atan", "np.arctan(a)", -5, 5},
  {"sinh", "np.sinh(a)", -4, 4}, {"cosh", "np.cosh(a)", -4, 4}, {"tanh", "np.tanh(a)", -4, 4},
  {"erf", "np.vectorize(math.erf, otypes=[a.dtype])(a)", -3, 3},
}
local float_only = {reciprocal = true, exp = true, expm1 = true, log = true, log1p = true, sqrt = true, rsqrt = true,
                    sin = true, cos = true, tan = true, asin = true, acos = true, atan = true, sinh = true,
                    cosh = true, tanh = true, erf = true}

suite("unary primitives", function(case)
  for _, u in ipairs(unary) do
    local op, expr, lo, hi = u[1], u[2], u[3], u[4]
    for _, dtype in ipairs {"float32", "float64"} do
      for _, shape in ipairs(shapes) do
        local x = np.rand(shape, lo, hi, dtype)
        case(op .. " " .. dtype .. shape_name(shape), function() return hl[op](x) end, expr, {x}, {dtype = dtype, atol = 2e-6})
      end
    end
    -- integers: float ops compute in float32 (as JAX does); the others keep the dtype
    local xi = np.rand({3, 4}, math.max(lo, -3), math.max(hi, 3), "int32")
    if op == "log" or op == "log1p" or op == "sqrt" or op == "rsqrt" or op == "reciprocal" or op == "asin" or op == "acos" then
      xi = np.rand({3, 4}, 1, 4, "int32")
    end
    if float_only[op] then
      case(op .. " int32 -> float32", function() return hl[op](xi) end, expr:gsub("%f[%w]a%f[^%w]", "a.astype(np.float32)"), {xi}, {dtype = "float32", atol = 2e-6})
    else
      case(op .. " int32", function() return hl[op](xi) end, expr, {xi}, {dtype = "int32"})
      local xl = np.rand({5}, -3, 3, "int64")
      case(op .. " int64", function() return hl[op](xl) end, expr, {xl}, {dtype = "int64"})
    end
  end
  -- special values: NaN, infinities, signed zeros, a denormal, huge values (sin, cos and tan are
  -- accurate below 6e9 only: their huge-argument behaviour is tested for range below). The
  -- denormals only where float32 keeps them: CUDA flushes them to zero (np.float32_specials)
  local special = hl.array(np.float32_specials({0 / 0, 1 / 0, -1 / 0, 0, -0.0, 1e-40, -1e-40, 3e38, -3e38, 1, -1, 0.5}))
  local special_trig = hl.array(np.float32_specials({0 / 0, 1 / 0, -1 / 0, 0, -0.0, 1e-40, -1e-40, 1.6e7, -1.6e7, 1, -1, 0.5}))
  for _, u in ipairs(unary) do
    local x = (u[1] == "sin" or u[1] == "cos" or u[1] == "tan") and special_trig or special
    case(u[1] .. " on NaN, inf, zeros, denormals, huge", function() return hl[u[1]](x) end, u[2], {x},
         {dtype = "float32", atol = 2e-6})
  end
  for _, op in ipairs {"isnan", "isinf", "isfinite", "logical_not"} do
    local expr = "np." .. op .. "(a)"
    case(op .. " float32", function() return hl[op](special) end, expr, {special}, {dtype = "bool"})
    local xi = hl.array({0, 3, -2}, "int32")
    case(op .. " int32", function() return hl[op](xi) end, expr, {xi}, {dtype = "bool"})
    local xb = hl.array({true, false})
    case(op .. " bool", function() return hl[op](xb) end, expr, {xb}, {dtype = "bool"})
  end
  case("uint8 neg wraps around", function() return hl.neg(hl.array({0, 1, 200}, "uint8")) end,
       "np.negative(a)", {hl.array({0, 1, 200}, "uint8")}, {dtype = "uint8"})
end)

describe("sin and cos of huge arguments", function()
  it("stay within [-1, 1] (accuracy is promised below 6e9 only)", function()
    local x = hl.array({3e38, -3e38, 1e20, 123456789012, 2 ^ 30})
    for _, op in ipairs {"sin", "cos"} do
      for _, v in ipairs(hl[op](x):totable()) do assert.is_true(v >= -1 and v <= 1, op .. " gave " .. v) end
    end
  end)
end)

local binary = {
  {"add", "a + b"}, {"sub", "a - b"}, {"mul", "a * b"}, {"maximum", "np.maximum(a, b)"},
  {"minimum", "np.minimum(a, b)"}, {"eq", "np.equal(a, b)"}, {"ne", "np.not_equal(a, b)"},
  {"lt", "np.less(a, b)"}, {"le", "np.less_equal(a, b)"}, {"gt", "np.greater(a, b)"},
  {"ge", "np.greater_equal(a, b)"}, {"mod", "np.mod(a, b)"}, {"floor_divide", "np.floor_divide(a, b)"},
  {"pow", "np.power(a, b)"}, {"div", "np.true_divide(a, b)"}, {"atan2", "np.arctan2(a, b)"},
  {"logical_and", "np.logical_and(a, b)"}, {"logical_or", "np.logical_or(a, b)"},
  {"logical_xor", "np.logical_xor(a, b)"},
}
local compare = {eq = true, ne = true, lt = true, le = true, gt = true, ge = true, logical_and = true,
                 logical_or = true, logical_xor = true}
local pairs_of_shapes = {
  {{}, {}}, {{5}, {5}}, {{3, 4}, {3, 4}}, {{3, 1}, {1, 4}}, {{4}, {2, 3, 4}}, {{2, 1, 4}, {3, 1}}, {{0, 3}, {3}},
}

suite("binary primitives", function(case)
  for _, bop in ipairs(binary) do
    local op, expr = bop[1], bop[2]
    for _, dtype in ipairs {"float32", "float64", "int32", "int64", "uint8", "bool"} do
      local skip = (dtype ~= "float32" and dtype ~= "float64" and (op == "div" or op == "atan2"))
                   or (dtype == "bool" and not (compare[op] or op == "maximum" or op == "minimum" or op == "add" or op == "mul"))
                   or (dtype == "uint8" and (op == "pow" or op == "mod" or op == "floor_divide"))
      if not skip then
        local want_dtype = compare[op] and "bool" or dtype
        for si, sp in ipairs(pairs_of_shapes) do
          if dtype == "float32" or si <= 4 then
            local lo, hi, blo, bhi = -4, 4, -4, 4
            if op == "pow" then lo, hi, blo, bhi = 0.1, 3, -3, 3 end
            if op == "pow" and dtype:match("int") then lo, hi, blo, bhi = -4, 4, 0, 5 end
            if dtype == "uint8" then lo, hi, blo, bhi = 0, 255, 0, 255 end
            local a, b = np.rand(sp[1], lo, hi, dtype), np.rand(sp[2], blo, bhi, dtype)
            case(string.format("%s %s %s %s", op, dtype, shape_name(sp[1]), shape_name(sp[2])),
                 function() return hl[op](a, b) end, expr, {a, b}, {dtype = want_dtype})
          end
        end
      end
    end
    -- integers divide to float32, as in JAX
    if op == "div" then
      local a, b = hl.array({7, -7, 3, 0}, "int32"), hl.array({2, 2, -4, 5}, "int32")
      case("div int32 -> float32", function() return hl.div(a, b) end, "np.true_divide(a, b).astype(np.float32)", {a, b}, {dtype = "float32"})
    end
  end
  -- IEEE corner cases of the float ops
  local s = hl.array({0 / 0, 1 / 0, -1 / 0, 0, -0.0, 2, -2, 0.5, 3, -3, 1, 0 / 0})
  local t = hl.array({1, 0 / 0, 2, -0.0, 0, 0, 1 / 0, -1 / 0, -0.5, 2.5, 0 / 0, 0 / 0})
  for _, bop in ipairs(binary) do
    if not bop[1]:match("^logical") then
      case(bop[1] .. " on NaN, inf and zeros", function() return hl[bop[1]](s, t) end, bop[2], {s, t}, {dtype = compare[bop[1]] and "bool" or "float32"})
    end
  end
  -- Python's integer conventions, division by zero included (NumPy gives 0, as halua does)
  local a, b = hl.array({-7, 7, -7, 7, 5, -5, 0}, "int32"), hl.array({2, -2, -2, 2, 0, 0, 3}, "int32")
  case("mod int32 signs and zero", function() return hl.mod(a, b) end, "np.mod(a, b)", {a, b}, {dtype = "int32"})
  case("floor_divide int32 signs and zero", function() return hl.floor_divide(a, b) end, "np.floor_divide(a, b)", {a, b}, {dtype = "int32"})
  local fa, fb = hl.array({-7.5, 7.5, -7.5, 5.25}), hl.array({2, -2, -2, 0.5})
  case("mod float32 signs", function() return hl.mod(fa, fb) end, "np.mod(a, b)", {fa, fb}, {dtype = "float32"})
  local pb, pe = hl.array({-2, -2, -8, 0, 0, 2}), hl.array({3, 2, 1 / 3, -1, 0, -1})
  case("pow with negative bases and zero", function() return hl.pow(pb, pe) end, "np.power(a, b)", {pb, pe}, {dtype = "float32"})
end)

suite("promotion and weakly typed Lua numbers", function(case)
  local i32, f32, f64 = hl.array({1, -2, 3}, "int32"), hl.array({0.5, 1.5, -2}), hl.array({0.25, 2, 3}, "float64")
  local i64, u8, bl = hl.array({4, 5, -6}, "int64"), hl.array({250, 3, 9}, "uint8"), hl.array({true, false, true})
  case("int32 + float32 -> float32", function() return i32 + f32 end, "a.astype(np.float32) + b", {i32, f32}, {dtype = "float32"})
  case("int64 * float32 -> float32 (as JAX)", function() return i64 * f32 end, "(a * b).astype(np.float32)", {i64, f32}, {dtype = "float32"})
  case("float32 + float64 -> float64", function() return f32 + f64 end, "a + b", {f32, f64}, {dtype = "float64"})
  case("uint8 + int32 -> int32", function() return u8 + i32 end, "a.astype(np.int32) + b", {u8, i32}, {dtype = "int32"})
  case("bool + int32 -> int32", function() return bl + i32 end, "a + b", {bl, i32}, {dtype = "int32"})
  case("int32 * 2 stays int32", function() return i32 * 2 end, "a * 2", {i32}, {dtype = "int32"})
  case("2 - int32 stays int32", function() return 2 - i32 end, "2 - a", {i32}, {dtype = "int32"})
  case("int32 * 2.5 -> float32", function() return i32 * 2.5 end, "a.astype(np.float32) * 2.5", {i32}, {dtype = "float32"})
  case("float32 + 1 stays float32", function() return f32 + 1 end, "a + np.float32(1)", {f32}, {dtype = "float32"})
  case("float64 / 3 stays float64", function() return f64 / 3 end, "a / 3", {f64}, {dtype = "float64"})
  case("uint8 + 10 wraps in uint8", function() return u8 + 10 end, "a + np.uint8(10)", {u8}, {dtype = "uint8"})
  case("bool + 1 -> int32", function() return bl + 1 end, "a.astype(np.int32) + 1", {bl}, {dtype = "int32"})
  case("operators + - * / % ^ and unary -", function() return -((f32 + 1) * 2 - f32 / 4) % 3 + f32 ^ 2 end,
       "np.mod(-((a + 1) * 2 - a / 4), 3) + a ** 2", {f32}, {dtype = "float32"})
  case("methods: a:add(b), x:exp()", function() return f32:add(f64):exp() end, "np.exp(a + b)", {f32, f64}, {dtype = "float64"})
  local c, x, y = hl.array({true, false, true}), hl.array({1, 2, 3}, "int32"), hl.array({0.5, 0.5, 0.5})
  case("where(bool, int32, float32) -> float32", function() return hl.where(c, x, y) end, "np.where(a, b, c)", {c, x, y}, {dtype = "float32"})
  case("where broadcasts and takes numbers", function() return hl.where(hl.gt(f32, 0), f32, 0) end, "np.where(a > 0, a, 0)", {f32}, {dtype = "float32"})
  local m = np.rand({3, 4}, -3, 3)
  case("where with a broadcast condition", function() return hl.where(hl.array({true, false, true, false}), m, -m) end,
       "np.where(np.array([True, False, True, False]), a, -a)", {m}, {dtype = "float32"})
  case("clip", function() return hl.clip(m, -1, 1.5) end, "np.clip(a, -1, 1.5)", {m}, {dtype = "float32"})
  case("clip with one bound", function() return hl.clip(m, nil, 0) end, "np.minimum(a, 0)", {m}, {dtype = "float32"})
end)

-- every op is also a method; special values in float64; NumPy's round-half-to-even
suite("methods and float64 special values", function(case)
  local x = np.rand({2, 3}, 0.1, 0.9)
  for _, u in ipairs(unary) do
    case("x:" .. u[1] .. "()", function() return x[u[1]](x) end, u[2], {x}, {dtype = "float32", atol = 2e-6})
  end
  for _, op in ipairs {"isnan", "isinf", "isfinite", "logical_not"} do
    case("x:" .. op .. "()", function() return x[op](x) end, "np." .. op .. "(a)", {x}, {dtype = "bool"})
  end
  local y = np.rand({3}, 0.5, 2)
  for _, bop in ipairs(binary) do
    case("a:" .. bop[1] .. "(b)", function() return x[bop[1]](x, y) end, bop[2], {x, y}, {dtype = compare[bop[1]] and "bool" or "float32"})
  end
  local special64 = hl.array({0 / 0, 1 / 0, -1 / 0, 0, -0.0, 1e-310, -1e-310, 1e308, -1e308, 1, -1, 0.5}, "float64")
  for _, u in ipairs(unary) do
    local v = special64
    if u[1] == "sin" or u[1] == "cos" or u[1] == "tan" then
      v = hl.array({0 / 0, 1 / 0, -1 / 0, 0, -0.0, 1e-310, -1e-310, 1e6, -1e6, 1, -1, 0.5}, "float64")
    end
    case(u[1] .. " float64 on NaN, inf, zeros, denormals, huge", function() return hl[u[1]](v) end, u[2], {v}, {dtype = "float64"})
  end
  for _, op in ipairs {"isnan", "isinf", "isfinite"} do
    case(op .. " float64", function() return hl[op](special64) end, "np." .. op .. "(a)", {special64}, {dtype = "bool"})
  end
  local halves = hl.array({0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 3.5, 4.5, 1e7 + 0.5, 0.49999997, -0.0, 8388609})
  case("round float32 ties to even", function() return hl.round(halves) end, "np.round(a)", {halves}, {dtype = "float32"})
  local halves64 = hl.array({0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 3.5, 4.5, 2 ^ 52 + 1, 0.49999999999999994, 1e15 + 0.5}, "float64")
  case("round float64 ties to even", function() return hl.round(halves64) end, "np.round(a)", {halves64}, {dtype = "float64"})
  local ints = hl.array({-2147483647, -1, 0, 1, 2147483647}, "int32")
  for _, op in ipairs {"abs", "sign", "neg", "square"} do
    case(op .. " int32 extremes", function() return hl[op](ints) end, "np." .. (op == "neg" and "negative" or op) .. "(a)", {ints}, {dtype = "int32"})
  end
  local ints64 = hl.array({-(2 ^ 40), -1, 0, 1, 2 ^ 40}, "int64")
  for _, op in ipairs {"abs", "sign", "neg", "floor", "ceil", "round"} do
    case(op .. " int64", function() return hl[op](ints64) end, "np." .. (op == "neg" and "negative" or op) .. "(a)", {ints64}, {dtype = "int64"})
  end
end)

-- weakly typed Lua numbers on either side of every binary op, for each dtype
suite("Lua numbers as operands", function(case)
  local arrays = {
    float32 = np.rand({2, 3}, -3, 3), float64 = np.rand({2, 3}, -3, 3, "float64"),
    int32 = np.rand({2, 3}, -5, 6, "int32"), int64 = np.rand({2, 3}, -5, 6, "int64"),
    uint8 = np.rand({2, 3}, 0, 250, "uint8"), bool = np.rand({2, 3}, 0, 1, "bool"),
  }
  local function npt(dt) return dt == "bool" and "np.bool_" or "np." .. dt end
  for _, bop in ipairs(binary) do
    local op, expr = bop[1], bop[2]
    for _, dt in ipairs {"float32", "float64", "int32", "uint8"} do
      local a = arrays[dt]
      local float = dt:match("float")
      local skip = (not float and (op == "div" or op == "atan2" or op == "pow")) or (dt == "uint8" and (op == "mod" or op == "floor_divide"))
      if not skip then
        -- an integral number keeps the array's dtype
        local k = (op == "pow") and 2 or 3
        local want = compare[op] and "bool" or dt
        local e1 = expr:gsub("%f[%w]b%f[^%w]", npt(dt) .. "(" .. k .. ")")
        case(string.format("%s(%s, %d)", op, dt, k), function() return hl[op](a, k) end, e1, {a}, {dtype = want})
        if op ~= "pow" or float then
          local e2 = expr:gsub("%f[%w]a%f[^%w]", "A"):gsub("%f[%w]b%f[^%w]", "a"):gsub("A", npt(dt) .. "(" .. k .. ")")
          local pos = dt == "uint8" and a or hl.abs(a) + 1
          case(string.format("%s(%d, %s)", op, k, dt), function() return hl[op](k, pos) end, e2, {pos}, {dtype = want})
        end
      end
    end
    -- a non-integral number with an integer or bool array computes in float32
    for _, dt in ipairs {"int32", "int64", "uint8", "bool"} do
      local a = arrays[dt]
      if not (op:match("^logical")) and not (op == "pow" and dt ~= "int32") then
        local e = expr:gsub("%f[%w]a%f[^%w]", "a.astype(np.float32)"):gsub("%f[%w]b%f[^%w]", "np.float32(2.5)")
        local want = compare[op] and "bool" or "float32"
        case(string.format("%s(%s, 2.5) -> %s", op, dt, want), function() return hl[op](a, 2.5) end, e, {a}, {dtype = want})
      end
    end
  end
  local b = arrays.bool
  case("bool + 2 -> int32", function() return b + 2 end, "a.astype(np.int32) + 2", {b}, {dtype = "int32"})
  case("bool * 2.5 -> float32", function() return b * 2.5 end, "a.astype(np.float32) * np.float32(2.5)", {b}, {dtype = "float32"})
  local u = arrays.uint8
  case("uint8 - 10 wraps in uint8", function() return u - 10 end, "a - np.uint8(10)", {u}, {dtype = "uint8"})
  case("uint8 * 2.5 -> float32", function() return u * 2.5 end, "a.astype(np.float32) * np.float32(2.5)", {u}, {dtype = "float32"})
  local i = arrays.int32
  case("int32 / 2 -> float32", function() return i / 2 end, "a.astype(np.float32) / np.float32(2)", {i}, {dtype = "float32"})
  case("2 / float32", function() return 2 / (hl.abs(arrays.float32) + 1) end, "np.float32(2) / (np.abs(a) + 1)", {arrays.float32}, {dtype = "float32"})
  case("7 % int32 (Python sign rule)", function() return 7 % (i * 0 + hl.array({3, -3, 2}, "int32")) end,
       "np.mod(7, a * 0 + np.array([3, -3, 2], np.int32))", {i}, {dtype = "int32"})
  case("2 ^ float32", function() return 2 ^ arrays.float32 end, "np.float32(2) ** a", {arrays.float32}, {dtype = "float32"})
  case("-int32", function() return -i end, "-a", {i}, {dtype = "int32"})
  case("float64 * 1e-300 keeps float64 precision", function() return arrays.float64 * 1e-300 end, "a * 1e-300", {arrays.float64}, {dtype = "float64"})
  case("float64 + 0.1 uses the double 0.1", function() return arrays.float64 + 0.1 end, "a + 0.1", {arrays.float64}, {dtype = "float64"})
end)

-- the promotion lattice bool < uint8 < int32 < int64 < float32 < float64 for every pair
suite("promotion of every dtype pair", function(case)
  local rank = {bool = 1, uint8 = 2, int32 = 3, int64 = 4, float32 = 5, float64 = 6}
  local order = {"bool", "uint8", "int32", "int64", "float32", "float64"}
  local vals = {{1, 0, 1, 1}, {0, 1, 1, 0}}
  for _, da in ipairs(order) do
    for _, db in ipairs(order) do
      local want = order[math.max(rank[da], rank[db])]
      local function mk(v, dt)
        if dt == "bool" then local t = {} for k, e in ipairs(v) do t[k] = e ~= 0 end return hl.array(t) end
        return hl.array({v[1] * 3, v[2] * 7, v[3] * 50, v[4] * 9}, dt)
      end
      local a, b = mk(vals[1], da), mk(vals[2], db)
      local t = want == "bool" and "np.bool_" or "np." .. want
      case(string.format("%s + %s -> %s", da, db, want), function() return a + b end,
           string.format("(a.astype(%s) + b.astype(%s))", t, t), {a, b}, {dtype = want})
      if da ~= db then
        case(string.format("maximum(%s, %s) -> %s", da, db, want), function() return hl.maximum(a, b) end,
             string.format("np.maximum(a.astype(%s), b.astype(%s))", t, t), {a, b}, {dtype = want})
      end
    end
  end
end)

-- integer corner cases NumPy defines: wrap-around, Python's mod/floor_divide signs for every
-- integer dtype, division by zero
suite("integer corner cases", function(case)
  local a = hl.array({2147483647, -2147483648, 100000}, "int32")
  case("int32 add wraps", function() return a + hl.array({1, -1, 100000}, "int32") end, "a + np.array([1, -1, 100000], np.int32)", {a}, {dtype = "int32"})
  case("int32 mul wraps", function() return a * hl.array({2, 2, 100000}, "int32") end, "a * np.array([2, 2, 100000], np.int32)", {a}, {dtype = "int32"})
  local u = hl.array({200, 3, 0}, "uint8")
  case("uint8 mul wraps", function() return u * hl.array({2, 100, 5}, "uint8") end, "a * np.array([2, 100, 5], np.uint8)", {u}, {dtype = "uint8"})
  case("uint8 sub wraps", function() return u - hl.array({201, 4, 1}, "uint8") end, "a - np.array([201, 4, 1], np.uint8)", {u}, {dtype = "uint8"})
  local p = hl.array({-7, 7, -7, 7, 5, -5, 0, 6}, "int64")
  local q = hl.array({2, -2, -2, 2, 0, 0, 3, -4}, "int64")
  case("mod int64 signs and zero", function() return hl.mod(p, q) end, "np.mod(a, b)", {p, q}, {dtype = "int64"})
  case("floor_divide int64 signs and zero", function() return hl.floor_divide(p, q) end, "np.floor_divide(a, b)", {p, q}, {dtype = "int64"})
  local m = hl.array({-2147483648, -2147483648, 9}, "int32")
  local n = hl.array({-1, 1, -1}, "int32")
  case("floor_divide INT_MIN by -1", function() return hl.floor_divide(m, n) end, "np.floor_divide(a, b)", {m, n}, {dtype = "int32"})
  case("mod INT_MIN by -1", function() return hl.mod(m, n) end, "np.mod(a, b)", {m, n}, {dtype = "int32"})
  local ud, uv = hl.array({7, 200, 5}, "uint8"), hl.array({2, 7, 0}, "uint8")
  case("mod uint8 and zero", function() return hl.mod(ud, uv) end, "np.mod(a, b)", {ud, uv}, {dtype = "uint8"})
  case("floor_divide uint8 and zero", function() return hl.floor_divide(ud, uv) end, "np.floor_divide(a, b)", {ud, uv}, {dtype = "uint8"})
  local i, z = hl.array({1, -1, 0}, "int32"), hl.array({0, 0, 0}, "int32")
  case("int32 / 0 gives inf, -inf, nan", function() return i / z end, "(a / b).astype(np.float32)", {i, z}, {dtype = "float32"})
  local e = hl.array({0, 1, 2, 3, 10, 31}, "int32")
  case("int32 pow", function() return hl.pow(hl.array({3, -2, 5, -1, 2, 2}, "int32"), e) end,
       "np.power(np.array([3, -2, 5, -1, 2, 2], np.int32), a)", {e}, {dtype = "int32"})
  local f = hl.array({-7.5, 7.5, 0, -0.0, 1 / 0, -1 / 0, 5, -5}, "float64")
  local g = hl.array({2, -2, 3, 3, 2, 2, 1 / 0, 1 / 0}, "float64")
  case("mod float64 signs, zeros and infinities", function() return hl.mod(f, g) end, "np.mod(a, b)", {f, g}, {dtype = "float64"})
  -- a zero remainder has the divisor's sign (1 / it tells the zeros apart), eager and jitted,
  -- float64 and float32 (which computes in float64)
  local zf = hl.array({-0.0, 0.0, -4, 4, 6, -6, -7.5, 7.5}, "float64")
  local zg = hl.array({2, -2, 2, -2, 3, -3, 2.5, -2.5}, "float64")
  local zero_sign = "1 / np.mod(a, b)"
  case("mod float64: the sign of a zero remainder", function() return 1 / hl.mod(zf, zg) end, zero_sign, {zf, zg}, {dtype = "float64"})
  case("mod float64 under jit: the sign of a zero remainder", function() return hl.jit(function(x, y) return 1 / (x % y) end)(zf, zg) end,
       zero_sign, {zf, zg}, {dtype = "float64"})
  local zf32, zg32 = zf:astype("float32"), zg:astype("float32")
  case("mod float32: the sign of a zero remainder", function() return 1 / hl.mod(zf32, zg32) end, zero_sign, {zf32, zg32}, {dtype = "float32"})
  case("mod float32 under jit: the sign of a zero remainder", function() return hl.jit(function(x, y) return 1 / hl.mod(x, y) end)(zf32, zg32) end,
       zero_sign, {zf32, zg32}, {dtype = "float32"})
  -- and a zero quotient the sign of a / b
  local qa = hl.array({0.0, -0.0, 1, -1, 0.0, -0.0, 1, -1}, "float64")
  local qb = hl.array({2, 2, 3, 3, -2, -2, -3, -3}, "float64")
  local quotient_sign = "1 / np.floor_divide(a, b)"
  for _, dt in ipairs {"float64", "float32"} do
    local x, y = qa:astype(dt), qb:astype(dt)
    case("floor_divide " .. dt .. ": the sign of a zero quotient", function() return 1 / hl.floor_divide(x, y) end,
         quotient_sign, {x, y}, {dtype = dt})
    case("floor_divide " .. dt .. " under jit: the sign of a zero quotient",
         function() return hl.jit(function(u, v) return 1 / hl.floor_divide(u, v) end)(x, y) end, quotient_sign, {x, y}, {dtype = dt})
  end
  case("floor_divide float64 signs, zeros and infinities", function() return hl.floor_divide(f, g) end, "np.floor_divide(a, b)", {f, g}, {dtype = "float64"})
end)

-- more broadcasting shapes: 0-d against 3-d, size-1 axes on both sides, zero-size axes
suite("broadcasting", function(case)
  local pairs_more = {
    {{}, {2, 3, 4}}, {{2, 3, 4}, {1, 1, 1}}, {{2, 1, 4, 1}, {3, 1, 5}}, {{0}, {1}}, {{2, 0, 3}, {3}},
    {{1, 0}, {4, 1}}, {{5, 1}, {1}},
  }
  for _, sp in ipairs(pairs_more) do
    local a, b = np.rand(sp[1], -2, 2), np.rand(sp[2], -2, 2)
    local name = shape_name(sp[1]) .. " with " .. shape_name(sp[2])
    case("add " .. name, function() return hl.add(a, b) end, "a + b", {a, b}, {dtype = "float32"})
    case("lt " .. name, function() return hl.lt(b, a) end, "b < a", {a, b}, {dtype = "bool"})
    case("where " .. name, function() return hl.where(hl.gt(a, 0), a, b) end, "np.where(a > 0, a, b)", {a, b}, {dtype = "float32"})
  end
  local m = np.rand({3, 4}, -2, 2)
  case("operators on a transposed view and a row", function() return m.T * m[1]:reshape({4, 1}) - m.T end,
       "a.T * a[0].reshape(4, 1) - a.T", {m}, {dtype = "float32"})
  case("ops on a strided slice", function() return hl.exp(m[{{1, 3, 2}, {4, 1, -1}}]) end, "np.exp(a[0:3:2, ::-1])", {m}, {dtype = "float32"})
  case("ops on a broadcast_to view", function() return hl.broadcast_to(m[1], {3, 4}) + m end, "np.broadcast_to(a[0], (3, 4)) + a", {m}, {dtype = "float32"})
end)

suite("where and clip", function(case)
  local x = np.rand({3, 4}, -2, 2)
  local i = np.rand({3, 4}, -5, 5, "int32")
  case("where with a 0-d condition", function() return hl.where(hl.array(true), x, -x) end, "np.where(True, a, -a)", {x}, {dtype = "float32"})
  case("where with numbers in both branches", function() return hl.where(hl.gt(x, 0), 1, -1) end, "np.where(a > 0, 1, -1).astype(np.float32)", {x}, {dtype = false})
  case("where with a number and an int32 array keeps int32", function() return hl.where(hl.gt(i, 0), i, 0) end, "np.where(a > 0, a, np.int32(0))", {i}, {dtype = "int32"})
  case("where does not leak NaN from the unselected branch", function() return hl.where(hl.gt(x, 0), hl.sqrt(x), 0) end,
       "np.where(a > 0, np.sqrt(np.abs(a)), 0).astype(np.float32)", {x}, {dtype = "float32"})
  case("where with a float condition treats non-zero as true", function() return hl.where(hl.array({0, 2.5, -1, 0}), 1, 2) end,
       "np.where(np.array([0, 2.5, -1, 0]), 1, 2).astype(np.float32)", {}, {dtype = false})
  case("where float64 and int32 -> float64", function() return hl.where(hl.gt(x, 0), x:astype("float64"), i) end,
       "np.where(a > 0, a.astype(np.float64), b)", {x, i}, {dtype = "float64"})
  case("clip int32 with integral bounds stays int32", function() return hl.clip(i, -2, 3) end, "np.clip(a, -2, 3)", {i}, {dtype = "int32"})
  case("clip with array bounds", function() return hl.clip(x, hl.full({4}, -0.5), hl.array({{0.1}, {1}, {2}})) end,
       "np.clip(a, np.full(4, -0.5, np.float32), np.array([[0.1], [1], [2]], np.float32))", {x}, {dtype = "float32"})
  case("clip with lo > hi gives hi (NumPy's order)", function() return hl.clip(x, 1, -1) end, "np.minimum(np.maximum(a, 1), -1)", {x}, {dtype = "float32"})
  local s = hl.array({0 / 0, 1 / 0, -1 / 0, 0.5})
  case("clip keeps NaN and clamps infinities", function() return hl.clip(s, -1, 1) end, "np.clip(a, -1, 1)", {s}, {dtype = "float32"})
  case("clip with only lo", function() return hl.clip(x, 0) end, "np.maximum(a, 0)", {x}, {dtype = "float32"})
  case("x:clip method", function() return x:clip(-1, 1) end, "np.clip(a, -1, 1)", {x}, {dtype = "float32"})
end)

-- arrays large enough to take the vectorised, multi-threaded paths
suite("large arrays", function(case)
  math.randomseed(12)
  local a, row = np.rand({700, 300}, -2, 2), np.rand({300}, -2, 2)
  local col = np.rand({700, 1}, -2, 2)
  case("add [700,300] + [300]", function() return a + row end, "a + b", {a, row}, {dtype = "float32"})
  case("mul [700,300] * [700,1]", function() return a * col end, "a * b", {a, col}, {dtype = "float32"})
  case("exp of a transposed [300,700] view", function() return hl.exp(a.T) end, "np.exp(a.T)", {a}, {dtype = "float32"})
  case("tanh of a strided [350,100] slice", function() return hl.tanh(a[{{1, 700, 2}, {300, 1, -3}}]) end, "np.tanh(a[0:700:2, ::-3])", {a}, {dtype = "float32"})
  case("where over [700,300]", function() return hl.where(hl.gt(a, row), a, col) end, "np.where(a > b, a, c)", {a, row, col}, {dtype = "float32"})
  local i = np.rand({700, 300}, -50, 50, "int32")
  case("int32 floor_divide and mod over [700,300]", function() return hl.floor_divide(i, 7) * 100 + hl.mod(i, -7) end,
       "np.floor_divide(a, 7) * 100 + np.mod(a, -7)", {i}, {dtype = "int32"})
  case("float64 [700,300] + [300]", function() return a:astype("float64") / row:astype("float64") end,
       "a.astype(np.float64) / b.astype(np.float64)", {a, row}, {dtype = "float64"})
end)

describe("large arrays, repeated", function()
  it("give the same bits every time (no races between worker threads)", function()
    local x = hl.sin(hl.reshape(hl.arange(2 ^ 20, "float32"), {1024, 1024}) * 0.001)
    local ref_sum, ref_el = hl.sum(x, 2):totable(), (x * 3 + x.T):sum():item()
    for _ = 1, 20 do
      assert.are.same(ref_sum, hl.sum(x, 2):totable())
      assert.are.equal(ref_el, (x * 3 + x.T):sum():item())
    end
  end)
end)
