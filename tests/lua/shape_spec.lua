-- reshape, broadcast_to, concatenate, expand_dims/squeeze and the indexing forms (1-based,
-- inclusive ranges, steps, negatives). Creation and properties are in creation_spec.lua.
local hl = require "halua"
local np = require "support.numpy"
local suite = require "support.suite"

math.randomseed(41)

suite("reshape, broadcast_to, concatenate, expand_dims, squeeze", function(case)
  local x = np.rand({2, 3, 4}, -1, 1)
  case("reshape", function() return hl.reshape(x, {4, 6}) end, "a.reshape(4, 6)", {x})
  case("reshape with -1", function() return hl.reshape(x, {-1, 2}) end, "a.reshape(-1, 2)", {x})
  case("reshape with the extents as arguments", function() return x:reshape(4, 6) end, "a.reshape(4, 6)", {x})
  case("reshape with the extents as arguments and -1", function() return hl.reshape(x, 2, -1, 3) end, "a.reshape(2, -1, 3)", {x})
  case("reshape to 0-d and back", function() return hl.reshape(hl.reshape(hl.array({5}), {}), {1, 1}) end, "np.array([[5.0]], np.float32)", {})
  case("reshape of a transposed view copies", function() return hl.reshape(x.T, {-1}) end, "a.T.reshape(-1)", {x})
  case("flatten", function() return hl.flatten(x) end, "a.reshape(-1)", {x})
  case("broadcast_to", function() return hl.broadcast_to(hl.array({1, 2, 3}), {2, 3}) end, "np.broadcast_to(np.array([1, 2, 3], np.float32), (2, 3))", {})
  case("broadcast_to a new leading axis and a size-1 axis", function() return hl.broadcast_to(x[{{}, {1, 1}, {}}], {5, 2, 3, 4}) end,
       "np.broadcast_to(a[:, 0:1, :], (5, 2, 3, 4))", {x})
  local y = np.rand({2, 5, 4}, -1, 1)
  case("concatenate on axis 2", function() return hl.concatenate({x, y}, 2) end, "np.concatenate([a, b], axis=1)", {x, y})
  case("concatenate on axis -1", function() return hl.concatenate({x, x}, -1) end, "np.concatenate([a, a], axis=-1)", {x})
  case("concatenate promotes dtypes", function() return hl.concatenate({hl.array({1, 2}, "int32"), hl.array({0.5})}, 1) end,
       "np.array([1, 2, 0.5], np.float32)", {}, {dtype = "float32"})
  case("concatenate with a zero-size piece", function() return hl.concatenate({x, hl.zeros({2, 0, 4})}, 2) end, "a", {x})
  case("concatenate under jit", function() return hl.jit(function(a, b) return hl.concatenate({a * 2, b}, 2) end)(x, y) end,
       "np.concatenate([a * 2, b], axis=1)", {x, y})
  case("expand_dims", function() return hl.expand_dims(x, 2) end, "np.expand_dims(a, 1)", {x})
  case("expand_dims at the end", function() return hl.expand_dims(x, -1) end, "np.expand_dims(a, -1)", {x})
  case("squeeze", function() return hl.squeeze(hl.zeros({1, 3, 1})) end, "np.zeros(3, np.float32)", {})
  case("squeeze one axis", function() return hl.squeeze(hl.zeros({1, 3, 1}), 3) end, "np.zeros((1, 3), np.float32)", {})
end)

suite("indexing", function(case)
  local x = np.rand({4, 5, 6}, -1, 1)
  case("x[i] selects along axis 1", function() return x[2] end, "a[1]", {x})
  case("x[-1] counts from the end", function() return x[-1] end, "a[-1]", {x})
  case("x[i][j][k] to a 0-d array", function() return x[2][3][4] end, "a[1, 2, 3]", {x})
  case("inclusive ranges", function() return x[{{2, 3}, {1, 4}}] end, "a[1:3, 0:4]", {x})
  case("whole axes with {}", function() return x[{{}, {}, {2, 2}}] end, "a[:, :, 1:2]", {x})
  case("index and range mixed", function() return x[{2, {}, {-2, -1}}] end, "a[1, :, -2:]", {x})
  case("strided ranges", function() return x[{{1, 4, 2}, {}, {1, 6, 3}}] end, "a[0:4:2, :, 0:6:3]", {x})
  case("negative steps", function() return x[{{4, 1, -1}, {5, 1, -2}}] end, "a[3::-1, 4::-2]", {x})
  case("open ends", function() return x[{{3}, {nil, 2}}] end, "a[2:, :2]", {x})
  case("ranges clamp like string.sub", function() return x[{{2, 100}}] end, "a[1:]", {x})
  case("an empty range", function() return x[{{3, 2}}] end, "a[2:2]", {x})
  case("indexing under jit", function() return hl.jit(function(a) return a[{{1, 4, 2}, -1}] * 3 end)(x) end, "a[0:4:2, -1] * 3", {x})
  case("a slice of a slice feeds an op", function() return x[{{2, 4}}][{{}, {2, 5, 2}}] + 1 end, "a[1:4][:, 1:5:2] + 1", {x})
end)

suite("more reshape, broadcast_to and concatenate", function(case)
  local x = np.rand({2, 3, 4}, -1, 1)
  case("reshape to {1, -1, 1}", function() return hl.reshape(x, {1, -1, 1}) end, "a.reshape(1, -1, 1)", {x})
  case("reshape with -1 first of three", function() return hl.reshape(x, {-1, 3, 2}) end, "a.reshape(-1, 3, 2)", {x})
  case("reshape a zero-size array", function() return hl.reshape(hl.zeros({0, 3}), {3, 0}) end, "np.zeros((3, 0), np.float32)", {})
  case("reshape a zero-size array with -1", function() return hl.reshape(hl.zeros({0, 3}), {-1, 3}) end, "np.zeros((0, 3), np.float32)", {})
  case("reshape of a strided slice", function() return hl.reshape(x[{{}, {3, 1, -2}, {1, 4, 3}}], {-1}) end, "a[:, 2::-2, 0::3].reshape(-1)", {x})
  case("reshape of a broadcast_to view", function() return hl.reshape(hl.broadcast_to(x[1][1], {3, 4}), {2, 6}) end,
       "np.broadcast_to(a[0, 0], (3, 4)).reshape(2, 6)", {x})
  case("reshape keeps int64 and bool", function() return hl.reshape(hl.array({{true, false}, {false, true}}), {4}) end,
       "np.array([True, False, False, True])", {})
  case("reshape with a number as the shape", function() return hl.reshape(x, 24) end, "a.reshape(24)", {x})
  case("x:reshape method", function() return x:reshape({4, 6}) end, "a.reshape(4, 6)", {x})
  case("broadcast_to of a 0-d array", function() return hl.broadcast_to(hl.array(2.5), {2, 3}) end, "np.full((2, 3), 2.5, np.float32)", {})
  case("broadcast_to a zero extent", function() return hl.broadcast_to(hl.array({1, 2, 3}), {0, 3}) end, "np.zeros((0, 3), np.float32)", {})
  case("broadcast_to of a transposed view", function() return hl.broadcast_to(x.T, {2, 4, 3, 2}) end, "np.broadcast_to(a.T, (2, 4, 3, 2))", {x})
  case("broadcast_to the same shape", function() return hl.broadcast_to(x, {2, 3, 4}) end, "a", {x})
  case("broadcast_to then an op then a reduction", function() return hl.sum(hl.broadcast_to(x, {5, 2, 3, 4}) * 2, 1) end,
       "np.sum(np.broadcast_to(a, (5, 2, 3, 4)) * 2, axis=0)", {x}, {rtol = 1e-5, atol = 1e-6})
  local i32, u8, i64, b = hl.array({1, 2}, "int32"), hl.array({200}, "uint8"), hl.array({2 ^ 40}, "int64"), hl.array({true})
  case("concatenate three pieces on axis 1", function() return hl.concatenate({x, x * 2, x[{{1, 1}}]}, 1) end,
       "np.concatenate([a, a * 2, a[0:1]], axis=0)", {x})
  case("concatenate 1-d arrays", function() return hl.concatenate({hl.array({1, 2}), hl.array({3}), hl.array({4, 5, 6})}, 1) end,
       "np.arange(1, 7, dtype=np.float32)", {})
  case("concatenate int32, uint8 -> int32", function() return hl.concatenate({i32, u8}, 1) end, "np.array([1, 2, 200], np.int32)", {}, {dtype = "int32"})
  case("concatenate bool, int64 -> int64", function() return hl.concatenate({b, i64}, 1) end, "np.array([1, 2**40], np.int64)", {}, {dtype = "int64"})
  case("concatenate float32, float64 -> float64", function() return hl.concatenate({hl.array({0.1}), hl.array({0.1}, "float64")}, 1) end,
       "np.array([np.float32(0.1), 0.1])", {}, {dtype = "float64"})
  case("concatenate bools stays bool", function() return hl.concatenate({b, hl.array({false, true})}, 1) end, "np.array([True, False, True])", {})
  case("concatenate zero-size pieces along another axis", function() return hl.concatenate({hl.zeros({0, 3}), hl.zeros({0, 2})}, 2) end,
       "np.zeros((0, 5), np.float32)", {})
  case("concatenate transposed views", function() return hl.concatenate({x.T, x.T}, 2) end, "np.concatenate([a.T, a.T], axis=1)", {x})
  case("concatenate on axis -3", function() return hl.concatenate({x, x}, -3) end, "np.concatenate([a, a], axis=-3)", {x})
  case("concatenate a single array", function() return hl.concatenate({x}, 2) end, "a", {x})
  case("concatenate 0-d-free 4-d pieces on the last axis", function() return hl.concatenate({hl.reshape(x, {2, 3, 2, 2}), hl.zeros({2, 3, 2, 1})}, 4) end,
       "np.concatenate([a.reshape(2, 3, 2, 2), np.zeros((2, 3, 2, 1), np.float32)], axis=3)", {x})
end)

suite("more indexing", function(case)
  local x = np.rand({4, 5, 6}, -1, 1)
  local v = np.rand({7}, -1, 1)
  case("x[i] of a 1-d array is 0-d", function() return v[3] end, "a[2]", {v})
  case("x[{i}] equals x[i]", function() return x[{3}] end, "a[2]", {x})
  case("x[{{}, -1}] takes the last column", function() return x[{{}, -1}] end, "a[:, -1]", {x})
  case("x[{-1, -1, -1}] is 0-d", function() return x[{-1, -1, -1}] end, "a[-1, -1, -1]", {x})
  case("negative inclusive ranges", function() return x[{{-3, -2}, {-5, -1}}] end, "a[-3:-1, -5:]", {x})
  case("a step larger than the axis", function() return v[{{1, 7, 10}}] end, "a[0:7:10]", {v})
  case("negative step with open ends", function() return v[{{nil, nil, -1}}] end, "a[::-1]", {v})
  case("negative step from a negative start", function() return v[{{-2, nil, -2}}] end, "a[-2::-2]", {v})
  case("a range clamps at 0 like string.sub", function() return v[{{0, 2}}] end, "a[0:2]", {v})
  case("all-axes strided with negative steps", function() return x[{{4, 1, -3}, {5, 1, -2}, {6, 1, -5}}] end, "a[3::-3, 4::-2, 5::-5]", {x})
  local i = np.rand({3, 4}, -9, 9, "int64")
  case("indexing int64", function() return i[{{2, 3}, {1, 4, 3}}] end, "a[1:3, 0:4:3]", {i})
  local b = np.rand({3, 4}, 0, 1, "bool")
  case("indexing bool", function() return b[-1] end, "a[-1]", {b})
  case("indexing a transposed view", function() return x.T[{2, {}, {1, 4, 2}}] end, "a.T[1, :, 0:4:2]", {x})
  case("indexing a broadcast_to view", function() return hl.broadcast_to(v, {3, 7})[{{}, {2, 6, 2}}] end, "np.broadcast_to(a, (3, 7))[:, 1:6:2]", {v})
  case("a slice feeds matmul", function() return hl.matmul(x[1][{{2, 4}}], x[2].T[{{}, {1, 3}}]) end, "a[0][1:4] @ a[1].T[:, 0:3]", {x}, {rtol = 1e-5, atol = 1e-6})
  case("a slice feeds a reduction", function() return hl.sum(x[{{}, {5, 1, -2}}], 2) end, "np.sum(a[:, 4::-2], axis=1)", {x}, {rtol = 1e-5, atol = 1e-6})
  case("a zero-size range feeds an op", function() return x[{{3, 2}}] * 2 end, "a[2:2] * 2", {x})
  case("indexing a 0-size axis with a range", function() return hl.zeros({0, 3})[{{}, {2, 3}}] end, "np.zeros((0, 2), np.float32)", {})
end)

suite("expand_dims and squeeze", function(case)
  local x = np.rand({3, 1, 4}, -1, 1)
  case("expand_dims of a 0-d array", function() return hl.expand_dims(hl.array(3), 1) end, "np.array([3], np.float32)", {})
  case("expand_dims at axis -2", function() return hl.expand_dims(x, -2) end, "np.expand_dims(a, -2)", {x})
  case("squeeze with no size-1 axes is a no-op", function() return hl.squeeze(hl.zeros({2, 3})) end, "np.zeros((2, 3), np.float32)", {})
  case("squeeze axis -2", function() return hl.squeeze(x, -2) end, "np.squeeze(a, -2)", {x})
  case("squeeze several axes", function() return hl.squeeze(hl.reshape(x, {1, 3, 1, 4, 1}), {1, 5}) end, "a.reshape(1, 3, 1, 4, 1).squeeze((0, 4))", {x})
end)

-- Random chains of views (transposes, strided and reversed slices, broadcasts, reshapes) of
-- random or constant arrays, each fed to a reduction, an elementwise chain or matmul, against
-- NumPy doing the same. A fixed seed: the same cases on every run.
suite("random views feeding ops", function(case)
  math.randomseed(4242)
  local R = math.random
  local function tuple(t) return "(" .. table.concat(t, ",") .. (#t == 1 and ",)" or ")") end
  for k = 1, 120 do
    local rank = R(1, 4)
    local shape = {}
    for d = 1, rank do shape[d] = R(1, 4) end
    local base, expr, input
    if R() < 0.3 then
      local c = R(1, 5) / 2
      base = function() return hl.full(shape, c) end
      expr = string.format("np.full(%s, %s, np.float32)", tuple(shape), tostring(c))
    else
      input = np.rand(shape, -2, 2)
      base = function() return input end
      expr = "a"
    end
    local steps, desc = {}, {}
    local cur = {unpack(shape)}
    for _ = 1, R(1, 3) do
      local kind = R(1, 4)
      local n = #cur
      if kind == 1 and n >= 2 then
        local perm = {}
        for d = 1, n do perm[d] = d end
        for d = n, 2, -1 do local j = R(1, d); perm[d], perm[j] = perm[j], perm[d] end
        local p0, nxt = {}, {}
        for d = 1, n do p0[d] = perm[d] - 1; nxt[d] = cur[perm[d]] end
        steps[#steps + 1] = function(v) return hl.transpose(v, perm) end
        expr = string.format("np.transpose(%s, %s)", expr, tuple(p0))
        desc[#desc + 1] = "T{" .. table.concat(perm, ",") .. "}"
        cur = nxt
      elseif kind == 2 then
        local key, nxt = {}, {}
        local e = expr
        for d = 1, n do
          local len = cur[d]
          local step = ({1, 1, 2, -1, -2})[R(1, 5)]
          local s, t
          if step > 0 then s = R(1, len); t = R(s, len) else s = R(1, len); t = R(1, s) end
          key[d] = {s, t, step}
          local idx = {}
          for i = s, t, step do idx[#idx + 1] = i - 1 end
          e = string.format("np.take(%s, %s, axis=%d)", e, "[" .. table.concat(idx, ",") .. "]", d - 1)
          nxt[d] = #idx
        end
        steps[#steps + 1] = function(v) return v[key] end
        local kd = {}
        for d = 1, n do kd[d] = "{" .. table.concat(key[d], ",") .. "}" end
        desc[#desc + 1] = "[" .. table.concat(kd, ",") .. "]"
        expr = e
        cur = nxt
      elseif kind == 3 and n < 4 then
        local nxt = {R(1, 3)}
        for d = 1, n do nxt[d + 1] = cur[d] == 1 and R(1, 3) or cur[d] end
        steps[#steps + 1] = function(v) return hl.broadcast_to(v, nxt) end
        expr = string.format("np.broadcast_to(%s, %s)", expr, tuple(nxt))
        desc[#desc + 1] = "bcast[" .. table.concat(nxt, ",") .. "]"
        cur = nxt
      else
        local size = 1
        for d = 1, n do size = size * cur[d] end
        local nxt = (size % 2 == 0 and R() < 0.5) and {2, -1} or {size, 1}
        steps[#steps + 1] = function(v) return hl.reshape(v, nxt) end
        expr = string.format("np.reshape(%s, %s)", expr, tuple(nxt))
        desc[#desc + 1] = "reshape{" .. table.concat(nxt, ",") .. "}"
        cur = nxt[2] == -1 and {2, size / 2} or nxt
      end
    end
    local function view()
      local v = base()
      for _, f in ipairs(steps) do v = f(v) end
      return v
    end
    local n = #cur
    local op = R(1, 5)
    local name = string.format("case %d: %s %s", k, table.concat(desc, " "), "")
    local inputs = input and {input} or {}
    local size = 1
    for d = 1, n do size = size * cur[d] end
    if op == 1 then
      local axes, ax0 = {}, {}
      for d = 1, n do if R() < 0.5 then axes[#axes + 1] = d; ax0[#ax0 + 1] = d - 1 end end
      if #axes == 0 then axes[1] = n; ax0[1] = n - 1 end
      local keep = R() < 0.5
      case(name .. "sum {" .. table.concat(axes, ",") .. "}", function() return hl.sum(view(), axes, keep) end,
           string.format("np.sum(%s, axis=%s, keepdims=%s)", expr, tuple(ax0), keep and "True" or "False"), inputs,
           {dtype = "float32", rtol = 1e-5, atol = 1e-5})
    elseif op == 2 and size > 0 then
      local ax = R(1, n)
      case(name .. "max " .. ax, function() return hl.max(view(), ax) end, string.format("np.max(%s, axis=%d)", expr, ax - 1), inputs, {dtype = "float32"})
    elseif op == 3 and size > 0 then
      local ax = -R(1, n)
      case(name .. "argmax " .. ax, function() return hl.argmax(view(), ax) end, string.format("np.argmax(%s, axis=%d) + 1", expr, ax), inputs, {dtype = "int64"})
    elseif op == 4 and n >= 2 then
      local perm = {}
      for d = 1, n do perm[d] = d end
      perm[n], perm[n - 1] = n - 1, n
      case(name .. "matmul with its transpose", function() local v = view(); return hl.matmul(v, hl.transpose(v, perm)) end,
           string.format("(lambda v: np.matmul(v, np.swapaxes(v, -1, -2)))(%s)", expr), inputs, {dtype = "float32", rtol = 1e-5, atol = 1e-5})
    else
      case(name .. "exp(v) * v + 1", function() local v = view(); return hl.exp(v) * v + 1 end,
           string.format("(lambda v: np.exp(v) * v + 1)(%s)", expr), inputs, {dtype = "float32", atol = 1e-5})
    end
  end
end)
