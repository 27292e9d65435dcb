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
  -- accurate below 6e9 only: their huge-argument behaviour is tested for range below)
  local special = hl.array({0 / 0, 1 / 0, -1 / 0, 0, -0.0, 1e-40, -1e-40, 3e38, -3e38, 1, -1, 0.5})
  local special_trig = hl.array({0 / 0, 1 / 0, -1 / 0, 0, -0.0, 1e-40, -1e-40, 1.6e7, -1.6e7, 1, -1, 0.5})
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
