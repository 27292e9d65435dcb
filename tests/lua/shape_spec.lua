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
