-- Calls every op in scope with arguments a script could pass by mistake, each under pcall, and
-- prints one tab-separated line per error that does not start "halua: <op>":
--   BAD <tab> op <tab> call <tab> message     (no "halua: " prefix: a raw Lua error)
--   NAME <tab> op <tab> call <tab> message    (the prefix, but another op's name)
-- then "DONE". A crash ends the process early: the spec sees no "DONE".
-- Run by errors_spec.lua in its own luajit process.
local hl = require "halua"

local leak   -- a tracer kept past the end of its hl.jit function
hl.jit(function(v) leak = v return v end)(hl.ones({2, 2}))
local odd = {
  {"nil", nil}, {"true", true}, {"a string", "str"}, {"an empty table", {}}, {"a ragged table", {{1}, {2, 3}}},
  {"a function", print}, {"a coroutine", coroutine.create(function() end)}, {"NaN", 0 / 0}, {"inf", 1 / 0},
  {"-1", -1}, {"2.5", 2.5}, {"1e300", 1e300}, {"a [0] array", hl.zeros({0})}, {"a 0-d array", hl.array(1)},
  {"a [4] array", hl.ones({4})}, {"a [3] bool array", hl.ones({3}, "bool")}, {"a userdata", io.stdout},
  {"a leaked tracer", leak},
}
local x = hl.ones({2, 3})
local k = hl.random.key(1)

local function check(op, desc, f, ...)
  local ok, err = pcall(f, ...)
  if ok then return end
  if type(err) ~= "string" or not err:find("^halua: ") then
    print(string.format("BAD\t%s\t%s(%s)\t%s", op, op, desc, (tostring(err):gsub("[\n\t]", " "))))
  elseif not err:find("^halua: " .. op:gsub("%p", "%%%0") .. ":") then
    print(string.format("NAME\t%s\t%s(%s)\t%s", op, op, desc, (err:gsub("[\n\t]", " "))))
  end
end

local unary = {"neg", "abs", "sign", "exp", "expm1", "log", "log1p", "sqrt", "rsqrt", "square", "reciprocal", "sin",
  "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "tanh", "erf", "floor", "ceil", "round", "isnan", "isinf",
  "isfinite", "logical_not"}
local binary = {"add", "sub", "mul", "div", "pow", "mod", "maximum", "minimum", "atan2", "floor_divide", "eq", "ne",
  "lt", "le", "gt", "ge", "logical_and", "logical_or", "logical_xor"}
local reductions = {"sum", "prod", "max", "min", "argmax", "argmin", "mean", "logsumexp"}

-- (elementwise ops: only the arguments that must fail, to keep the compiles few)
local function valid(v) return type(v) == "number" or type(v) == "boolean" or (hl.core.is_array(v) and v.size ~= 4) end
for _, op in ipairs(unary) do
  for _, o in ipairs(odd) do if not valid(o[2]) then check(op, o[1], hl[op], o[2]) end end
end
for _, op in ipairs(binary) do
  for _, o in ipairs(odd) do
    if not valid(o[2]) then
      check(op, "x, " .. o[1], hl[op], x, o[2])
      check(op, o[1] .. ", x", hl[op], o[2], x)
    end
  end
end
for _, op in ipairs(reductions) do
  for _, o in ipairs(odd) do
    -- (one number as the input stands for all: each makes a 0-d compile)
    if type(o[2]) ~= "number" or o[2] == 2.5 then check(op, o[1], hl[op], o[2]) end
    check(op, "x, axis " .. o[1], hl[op], x, o[2])
    if o[2] ~= nil then check(op, "x, 1, keepdims " .. o[1], hl[op], x, 1, o[2]) end
  end
  for _, ax in ipairs {0, 3, -3, 1.5, {1, 1}, {0}, {1, 5}, {"a"}} do
    check(op, "x, bad axis", hl[op], x, ax)
  end
end
for _, o in ipairs(odd) do
  check("matmul", "x, " .. o[1], hl.matmul, x, o[2])
  check("matmul", o[1] .. ", x", hl.matmul, o[2], x)
  check("transpose", o[1], hl.transpose, o[2])
  check("transpose", "x, perm " .. o[1], hl.transpose, x, o[2])
  check("reshape", o[1] .. ", {6}", hl.reshape, o[2], {6})
  check("reshape", "x, shape " .. o[1], hl.reshape, x, o[2])
  check("broadcast_to", o[1], hl.broadcast_to, o[2], {2, 3})
  check("broadcast_to", "x, shape " .. o[1], hl.broadcast_to, x, o[2])
  check("concatenate", "list " .. o[1], hl.concatenate, o[2], 1)
  check("concatenate", "{x, " .. o[1] .. "}", hl.concatenate, {x, o[2]}, 1)
  check("concatenate", "{x, x}, axis " .. o[1], hl.concatenate, {x, x}, o[2])
  check("where", "cond " .. o[1], hl.where, o[2], x, x)
  check("where", "branch " .. o[1], hl.where, hl.gt(x, 0), x, o[2])
  check("clip", o[1], hl.clip, o[2], 0, 1)
  check("clip", "x, lo " .. o[1], hl.clip, x, o[2], 1)
  check("array", o[1], hl.array, o[2])
  check("array", "{1}, dtype " .. o[1], hl.array, {1}, o[2])
  check("full", "shape " .. o[1], hl.full, o[2], 1)
  check("full", "{2}, value " .. o[1], hl.full, {2}, o[2])
  check("full", "zeros {2}, dtype " .. o[1], hl.zeros, {2}, o[2])
  check("arange", o[1], hl.arange, o[2])
  check("arange", "0, 5, step " .. o[1], hl.arange, 0, 5, o[2])
  check("linspace", "n " .. o[1], hl.linspace, 0, 1, o[2])
  check("eye", o[1], hl.eye, o[2])
  check("astype", o[1], function() return x:astype(o[2]) end)
  check("expand_dims", "x, " .. o[1], hl.expand_dims, x, o[2])
  check("squeeze", "x, " .. o[1], hl.squeeze, x, o[2])
  check("softmax", "x, " .. o[1], hl.nn.softmax, x, o[2])
  if type(o[2]) ~= "string" then check("index", o[1], function() return x[o[2]] end) end
  check("index", "{" .. o[1] .. "}", function() return x[{o[2]}] end)
  check("index", "{{1, " .. o[1] .. "}}", function() return x[{{1, o[2]}}] end)
  check("item", o[1], function() return hl.methods.item(o[2]) end)
  check("linalg.solve", o[1] .. ", b", hl.linalg.solve, o[2], hl.ones({3}))
  check("linalg.solve", "eye(3), " .. o[1], hl.linalg.solve, hl.eye(3), o[2])
  check("linalg.inv", o[1], hl.linalg.inv, o[2])
  check("linalg.cholesky", o[1], hl.linalg.cholesky, o[2])
  local sq = hl.eye(3)
  for _, op in ipairs {"qr", "svd", "eigh", "eigvalsh", "slogdet", "det", "pinv", "norm", "matrix_power", "lstsq", "solve_triangular"} do
    check("linalg." .. op, o[1], hl.linalg[op], o[2], o[2])
    if op ~= "lstsq" and op ~= "solve_triangular" then check("linalg." .. op, "eye(3), " .. o[1], hl.linalg[op], sq, o[2]) end
  end
  check("linalg.svd", "eye(3), true, " .. o[1], hl.linalg.svd, sq, true, o[2])
  check("linalg.norm", "eye(3), nil, " .. o[1], hl.linalg.norm, sq, nil, o[2])
  check("linalg.norm", "eye(3), 2, nil, " .. o[1], hl.linalg.norm, sq, 2, nil, o[2])
  check("linalg.lstsq", "eye(3), " .. o[1], hl.linalg.lstsq, sq, o[2])
  check("linalg.lstsq", "eye(3), ones(3), " .. o[1], hl.linalg.lstsq, sq, hl.ones({3}), o[2])
  check("linalg.solve_triangular", "eye(3), " .. o[1], hl.linalg.solve_triangular, sq, o[2])
  check("linalg.solve_triangular", "eye(3), ones(3), " .. o[1], hl.linalg.solve_triangular, sq, hl.ones({3}), o[2])
  check("linalg.solve_triangular", "eye(3), ones(3), lower = " .. o[1], hl.linalg.solve_triangular, sq, hl.ones({3}), {lower = o[2]})
  check("linalg.solve_triangular", "eye(3), ones(3), trans = " .. o[1], hl.linalg.solve_triangular, sq, hl.ones({3}), {trans = o[2]})
  check("sort", o[1], hl.sort, o[2])
  check("sort", "x, axis " .. o[1], hl.sort, x, o[2])
  check("argsort", o[1], hl.argsort, o[2])
  check("argsort", "x, axis " .. o[1], hl.argsort, x, o[2])
  check("lax.associative_scan", "add, " .. o[1], hl.lax.associative_scan, hl.add, o[2])
  check("lax.associative_scan", "fn " .. o[1], hl.lax.associative_scan, o[2], x)
  check("lax.associative_scan", "opts " .. o[1], hl.lax.associative_scan, hl.add, x, o[2])
  check("lax.associative_scan", "axis " .. o[1], hl.lax.associative_scan, hl.add, x, {axis = o[2]})
  check("cummax", o[1], hl.cummax, o[2])
  check("cummax", "x, " .. o[1], hl.cummax, x, o[2])
  check("cummin", "x, 1, " .. o[1], hl.cummin, x, 1, o[2])
  check("lax.top_k", o[1], hl.lax.top_k, o[2], 1)
  check("lax.top_k", "x, " .. o[1], hl.lax.top_k, x, o[2])
  check("lax.reduce_window", o[1], hl.lax.reduce_window, o[2], 0, "sum", {1, 1})
  check("lax.reduce_window", "init " .. o[1], hl.lax.reduce_window, x, o[2], "sum", {1, 1})
  check("lax.reduce_window", "op " .. o[1], hl.lax.reduce_window, x, 0, o[2], {1, 1})
  check("lax.reduce_window", "dims " .. o[1], hl.lax.reduce_window, x, 0, "sum", o[2])
  check("lax.reduce_window", "dims {" .. o[1] .. ", 1}", hl.lax.reduce_window, x, 0, "sum", {o[2], 1})
  check("lax.reduce_window", "strides " .. o[1], hl.lax.reduce_window, x, 0, "sum", {1, 1}, o[2])
  check("lax.reduce_window", "padding " .. o[1], hl.lax.reduce_window, x, 0, "sum", {1, 1}, nil, o[2])
  check("lax.reduce_window", "padding {{" .. o[1] .. "}}", hl.lax.reduce_window, x, 0, "sum", {1, 1}, nil, {{o[2], 0}, {0, 0}})
  check("lax.reduce_window", "bd " .. o[1], hl.lax.reduce_window, x, 0, "sum", {1, 1}, nil, nil, o[2])
  check("lax.reduce_window", "wd " .. o[1], hl.lax.reduce_window, x, 0, "sum", {1, 1}, nil, nil, nil, o[2])
  check("checkpoint", o[1], hl.checkpoint, o[2])
  check("checkpoint", "f, " .. o[1], hl.checkpoint, hl.sin, o[2])
  for _, name in ipairs {"gamma", "poisson"} do
    check("random." .. name, "key " .. o[1], hl.random[name], o[2], 1, {2})
    check("random." .. name, "param " .. o[1], hl.random[name], k, o[2], {2})
    check("random." .. name, "shape " .. o[1], hl.random[name], k, 1, o[2])
    check("random." .. name, "dtype " .. o[1], hl.random[name], k, 1, {2}, o[2])
  end
  check("random.beta", "a " .. o[1], hl.random.beta, k, o[2], 1, {2})
  check("random.beta", "b " .. o[1], hl.random.beta, k, 1, o[2], {2})
  check("random.dirichlet", "alpha " .. o[1], hl.random.dirichlet, k, o[2])
  check("random.dirichlet", "shape " .. o[1], hl.random.dirichlet, k, hl.ones(3), o[2])
  check("random.truncated_normal", "lower " .. o[1], hl.random.truncated_normal, k, o[2], 1, {2})
  check("random.truncated_normal", "upper " .. o[1], hl.random.truncated_normal, k, -1, o[2], {2})
  check("random.truncated_normal", "shape " .. o[1], hl.random.truncated_normal, k, -1, 1, o[2])
  check("random.choice", "a " .. o[1], hl.random.choice, k, o[2], {2})
  check("random.choice", "shape " .. o[1], hl.random.choice, k, 3, o[2])
  check("random.choice", "opts " .. o[1], hl.random.choice, k, 3, {2}, o[2])
  check("random.choice", "p " .. o[1], hl.random.choice, k, 3, {2}, {p = o[2]})
  check("random.choice", "replace " .. o[1], hl.random.choice, k, 3, {2}, {replace = o[2]})
  check("random.choice", "axis " .. o[1], hl.random.choice, k, x, {2}, {axis = o[2]})
  check("random.categorical", "shape " .. o[1], hl.random.categorical, k, x, -1, o[2])
  check("random.permutation", "axis " .. o[1], hl.random.permutation, k, x, o[2])
  check("random.permutation", "x " .. o[1], hl.random.permutation, k, o[2])
end
for _, shape in ipairs {{-1}, {2 ^ 62}, {1e300}, {0 / 0}, {1 / 0}, {2, 3, -5}} do
  check("full", "shape " .. table.concat(shape, ","), hl.zeros, shape)
  check("reshape", "shape " .. table.concat(shape, ","), hl.reshape, x, shape)
  check("broadcast_to", "shape " .. table.concat(shape, ","), hl.broadcast_to, x, shape)
end
check("arange", "huge", hl.arange, 0, 1e300)
check("arange", "huge step count", hl.arange, 0, 1, 1e-300)
check("linspace", "huge n", hl.linspace, 0, 1, 1e300)
check("eye", "huge", hl.eye, 1e300)
check("eye", "huge n x m", hl.eye, 2 ^ 40, 2 ^ 40)
print("DONE")
