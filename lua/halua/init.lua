-- halua: the Lua face of the engine. The C module (halua_core) holds arrays, primitives and
-- compiled pipelines; this file adds NumPy-style argument handling, composites written with
-- primitives, indexing, printing and hl.jit.
local core = require "halua_core"
local util = require "halua.util"
local tree = require "halua.tree"
local ok_format, format = pcall(require, "halua.format")

local hl = {core = core, tree = tree}
local P = core.prims
local mt = core.array_mt
local methods = {}

local fail = util.fail
local is_array = core.is_array

for _, d in ipairs {"float32", "float64", "float16", "bfloat16", "int8", "int32", "int64", "uint8", "bool"} do
  hl[d] = d
end

local shape_str = util.shape_str

-- Composites report errors under their own name, not their inner primitives' ("halua: mean:
-- axis 3 ..." rather than "halua: sum: ..."). Only the first op name of the message changes.
local pack = util.pack
local function named(op, f)
  return function(...)
    local r = pack(pcall(f, ...))
    if r[1] then return unpack(r, 2, r.n) end
    local msg = tostring(r[2])
    error((msg:gsub("^halua: [%w_]+: ", "halua: " .. op .. ": ", 1)), 0)
  end
end

-- an array from an array, a number or a boolean (as the primitives take them); anything else,
-- tables included, is op's error
local function as_array(x, op, argn)
  if is_array(x) then return x end
  local t = type(x)
  if t == "number" or t == "boolean" then return core.array(x) end
  fail("%s: argument %d is a %s, expected an array%s", op, argn or 1, t, t == "table" and " (make one with hl.array)" or "")
end

-- ---------------------------------------------------------------- devices

local CPU, CUDA = 0, 1
local default_dev = CPU

function hl.devices()
  local d = {"cpu"}
  for i = 1, core.cuda_count() do d[#d + 1] = "cuda:" .. i end
  return d
end

local function device_id(name, op)
  if name == "cpu" then return CPU end
  if type(name) == "string" and (name == "cuda" or name == "gpu" or name:match("^cuda:%d+$")) then
    local n = core.cuda_count()
    local i = tonumber(name:match("^cuda:(%d+)$") or "1")
    if n < 1 then
      fail("%s: no CUDA device here (hl.devices() lists %s)", op, table.concat(hl.devices(), ", "))
    end
    if i ~= 1 then fail("%s: %s: only the first GPU (cuda:1) is used so far", op, name) end
    return CUDA
  end
  fail("%s: unknown device %s (use \"cpu\" or \"cuda\")", op, tostring(name))
end

function hl.device_put(x, name)
  if not is_array(x) then x = core.array(x) end
  return core.to_device(x, device_id(name or "cpu", "device_put"))
end

function hl.default_device(name)
  if name ~= nil then default_dev = device_id(name, "default_device") end
  return default_dev == CPU and "cpu" or "cuda:1"
end

-- arrays made from Lua values start on the host; put them where the default device says. The
-- arguments were checked on the host already; what fails in the copy (a broadcast too long for
-- one pipeline, device memory) is reported under the op that makes the array ("halua: full:
-- ..."), not the copy's inner op, so that errors read the same on every device
local function placed(x, op)
  if default_dev == CPU then return x end
  local ok, r = pcall(core.to_device, x, default_dev)
  if ok then return r end
  local msg = tostring(r)
  local rest = msg:match("^halua: [%w_]+: (.*)$")
  error(rest and "halua: " .. op .. ": " .. rest or (msg:gsub("^halua: ", "halua: " .. op .. ": ", 1)), 0)
end

-- ---------------------------------------------------------------- creation

hl.array = function(v, dtype) return placed(core.array(v, dtype), "array") end
hl.asarray = function(x, dtype)
  if is_array(x) and (dtype == nil or x.dtype == dtype) then return x end
  if is_array(x) then return hl.astype(x, dtype) end
  return placed(core.array(x, dtype), "array")
end
function hl.full(shape, v, dtype) return placed(core.full(shape, v, dtype), "full") end
function hl.zeros(shape, dtype) return placed(core.full(shape, 0, dtype or "float32"), "full") end
function hl.ones(shape, dtype) return placed(core.full(shape, 1, dtype or "float32"), "full") end
-- a filled array like x: a constant of x's trace when x is traced, else on x's device
local function like(x, v, shape, dtype, op)
  x = as_array(x, op or "fill_like")
  local r = core.full(shape or x.shape, v, dtype or x.dtype, x)
  if core.is_tracer(x) then return r end
  return core.to_device(r, core.device_of(x))
end
hl.fill_like = like
function hl.zeros_like(x) return like(x, 0, nil, nil, "zeros_like") end
function hl.ones_like(x) return like(x, 1, nil, nil, "ones_like") end
function hl.full_like(x, v) return like(x, v, nil, nil, "full_like") end

local function is_dtype(v) return type(v) == "string" end

function hl.arange(a, b, c, d)
  -- arange([start,] stop [, step] [, dtype]); the dtype may come after any of them
  local args = {a, b, c, d}
  local dtype
  for i = #args, 1, -1 do
    if is_dtype(args[i]) then dtype = table.remove(args, i) end
  end
  local start, stop, step
  if #args == 0 then fail("arange: needs a stop value (arange([start,] stop [, step] [, dtype]))") end
  if #args == 1 then start, stop, step = 0, args[1], 1
  elseif #args == 2 then start, stop, step = args[1], args[2], 1
  else start, stop, step = args[1], args[2], args[3] end
  for _, v in ipairs {start, stop, step} do
    if type(v) ~= "number" then fail("arange: start, stop and step must be numbers") end
  end
  if step == 0 then fail("arange: step must not be 0") end
  local n = math.max(0, math.ceil((stop - start) / step))
  if not dtype then
    local integral = start == math.floor(start) and stop == math.floor(stop) and step == math.floor(step)
    dtype = integral and "int32" or "float32"
  end
  local i = core.iota("float64", {n}, 0)
  return placed((i * step + start):astype(dtype), "arange")
end

function hl.linspace(a, b, n, dtype)
  n = n or 50
  if type(a) ~= "number" or type(b) ~= "number" or type(n) ~= "number" then
    fail("linspace: start, stop and n must be numbers")
  end
  if n < 0 or n ~= math.floor(n) then fail("linspace: n must be a non-negative integer, got %s", tostring(n)) end
  local i = core.iota("float64", {n}, 0)
  local step = n > 1 and (b - a) / (n - 1) or 0
  local r = i * step + a
  if n > 1 then r = hl.where(hl.eq(i, n - 1), b, r) end   -- the end point exactly, as NumPy
  return placed(r:astype(dtype or "float32"), "linspace")
end

function hl.eye(n, m, dtype)
  if is_dtype(m) then m, dtype = nil, m end
  m = m or n
  local r = core.iota("int32", {n, m}, 0)
  local c = core.iota("int32", {n, m}, 1)
  return placed(hl.eq(r, c):astype(dtype or "float32"), "eye")
end

-- ---------------------------------------------------------------- elementwise

for name, f in pairs(P) do hl[name] = f end
hl.negative = P.neg
-- where(c, a, b) and clip(x, lo, hi)
function hl.clip(x, lo, hi)
  x = as_array(x, "clip")
  if lo ~= nil then x = P.maximum(x, lo) end
  if hi ~= nil then x = P.minimum(x, hi) end
  return x
end

function hl.astype(x, dtype) return core.cast(x, dtype) end

-- ---------------------------------------------------------------- axes

local function norm_axis(op, ax, ndim)
  if type(ax) ~= "number" or ax ~= math.floor(ax) then
    fail("%s: axis must be an integer, got %s", op, tostring(ax))
  end
  local a = ax < 0 and ndim + ax or ax - 1
  if a < 0 or a >= ndim then fail("%s: axis %d is out of range for %d dimensions", op, ax, ndim) end
  return a
end

-- a table of 0-based axes (sorted, unique) from nil, a number or a table
local function norm_axes(op, axes, ndim)
  local out, seen = {}, {}
  if axes == nil then
    for a = 0, ndim - 1 do out[#out + 1] = a end
    return out
  end
  if type(axes) ~= "table" then axes = {axes} end
  for _, ax in ipairs(axes) do
    local a = norm_axis(op, ax, ndim)
    if seen[a] then fail("%s: axis %d repeated", op, ax) end
    seen[a] = true
    out[#out + 1] = a
  end
  table.sort(out)
  return out
end

local function mask_of(axes)
  local m = 0
  for _, a in ipairs(axes) do m = m + 2 ^ a end
  return m
end

local function keep_shape(shape, axes)
  local s = {}
  for i = 1, #shape do s[i] = shape[i] end
  for _, a in ipairs(axes) do s[a + 1] = 1 end
  return s
end

local function reducer(name)
  local prim = P[name]
  return function(x, axes, keepdims)
    x = as_array(x, name)
    if type(axes) == "boolean" then axes, keepdims = nil, axes end
    local ax = norm_axes(name, axes, x.ndim)
    local r = prim(x, mask_of(ax))
    if keepdims then r = core.reshape(r, keep_shape(x.shape, ax)) end
    return r
  end
end
for _, name in ipairs {"sum", "prod", "max", "min"} do hl[name] = reducer(name) end

local function arg_reducer(name)
  local prim = P[name]
  return function(x, axis, keepdims)
    x = as_array(x, name)
    local shape = x.shape
    if axis == nil then
      x = core.reshape(x, {x.size})
      axis = 1
    end
    local a = norm_axis(name, axis, x.ndim)
    local r = prim(x, 2 ^ a) + 1   -- 1-based indices
    if keepdims then
      -- without an axis every axis of x is kept with extent 1, as NumPy's argmax(keepdims=True)
      if #shape ~= x.ndim then return core.reshape(r, keep_shape(shape, norm_axes(name, nil, #shape))) end
      r = core.reshape(r, keep_shape(x.shape, {a}))
    end
    return r
  end
end
hl.argmax = arg_reducer("argmax")
hl.argmin = arg_reducer("argmin")

local function count(x, axes)
  local n = 1
  local shape = x.shape
  for _, a in ipairs(norm_axes("mean", axes, x.ndim)) do n = n * shape[a + 1] end
  return n
end

function hl.mean(x, axes, keepdims)
  x = as_array(x, "mean")
  if type(axes) == "boolean" then axes, keepdims = nil, axes end
  -- float16 and bfloat16 average in float32, rounded once (as JAX does)
  if x.dtype == "float16" or x.dtype == "bfloat16" then return hl.mean(x:astype("float32"), axes, keepdims):astype(x.dtype) end
  local s = hl.sum(x, axes, keepdims)
  if s.dtype ~= "float32" and s.dtype ~= "float64" then s = s:astype("float32") end
  return s / count(x, axes)
end

function hl.logsumexp(x, axes, keepdims)
  if type(axes) == "boolean" then axes, keepdims = nil, axes end
  x = as_array(x, "logsumexp")
  if x.dtype == "float16" or x.dtype == "bfloat16" then return hl.logsumexp(x:astype("float32"), axes, keepdims):astype(x.dtype) end
  if x.dtype ~= "float32" and x.dtype ~= "float64" then x = x:astype("float32") end
  -- over nothing: log(0) = -inf (as NumPy's log(sum(exp(x))) and JAX); max has no identity there
  if count(x, axes) == 0 then
    return hl.full((keepdims and hl.sum(x, axes, true) or hl.sum(x, axes)).shape, -math.huge, x.dtype)
  end
  local m = hl.max(x, axes, true)
  -- an all -inf row keeps max -inf: subtract 0 there so the result is -inf, not NaN
  m = hl.where(P.isfinite(m), m, 0)
  local s = hl.log(hl.sum(hl.exp(x - m), axes, true)) + m
  if not keepdims then s = core.reshape(s, hl.sum(x, axes).shape) end
  return s
end

-- ---------------------------------------------------------------- linear algebra, shape

hl.matmul = core.matmul
function hl.dot(a, b)
  a, b = as_array(a, "dot", 1), as_array(b, "dot", 2)
  if a.ndim == 0 or b.ndim == 0 then return a * b end
  return core.matmul(a, b)
end

function hl.transpose(x, perm)
  x = as_array(x, "transpose")
  local n = x.ndim
  local p = {}
  if perm == nil then
    for i = 1, n do p[i] = n - i end
  else
    if type(perm) ~= "table" or #perm ~= n then
      fail("transpose: permutation must list %d axes for shape %s", n, shape_str(x.shape))
    end
    for i = 1, n do p[i] = norm_axis("transpose", perm[i], n) end
  end
  return core.transpose(x, p)
end

function hl.reshape(x, shape)
  x = as_array(x, "reshape")
  if type(shape) == "number" then shape = {shape} end
  if type(shape) ~= "table" then fail("reshape: shape must be a number or a table, got %s", type(shape)) end
  local s, hole, known = {}, nil, 1
  for i, e in ipairs(shape) do
    if e == -1 then
      if hole then fail("reshape: only one -1 is allowed in shape %s", shape_str(shape)) end
      hole = i
    elseif type(e) ~= "number" or e < 0 or e ~= math.floor(e) then
      fail("reshape: bad extent %s in shape %s", tostring(e), shape_str(shape))
    else
      known = known * e
    end
    s[i] = e
  end
  if hole then
    if known == 0 or x.size % known ~= 0 then
      fail("reshape: cannot reshape %s (%d elements) to %s", shape_str(x.shape), x.size, shape_str(shape))
    end
    s[hole] = x.size / known
  end
  return core.reshape(x, s)
end

function hl.flatten(x)
  x = as_array(x, "flatten")
  return core.reshape(x, {x.size})
end
hl.broadcast_to = core.broadcast_to

function hl.concatenate(list, axis)
  if type(list) ~= "table" or #list == 0 then fail("concatenate: needs a non-empty list of arrays") end
  if not is_array(list[1]) then fail("concatenate: element 1 is a %s, expected an array", type(list[1])) end
  return core.concatenate(list, norm_axis("concatenate", axis or 1, list[1].ndim))
end

function hl.expand_dims(x, axis)
  x = as_array(x, "expand_dims")
  local s = x.shape
  local a = norm_axis("expand_dims", axis, #s + 1)
  table.insert(s, a + 1, 1)
  return core.reshape(x, s)
end

function hl.squeeze(x, axes)
  x = as_array(x, "squeeze")
  local s, out = x.shape, {}
  local drop = {}
  if axes == nil then
    for i = 1, #s do drop[i] = s[i] == 1 end
  else
    for _, a in ipairs(norm_axes("squeeze", axes, #s)) do
      if s[a + 1] ~= 1 then fail("squeeze: axis %d has extent %d, not 1", a + 1, s[a + 1]) end
      drop[a + 1] = true
    end
  end
  for i = 1, #s do if not drop[i] then out[#out + 1] = s[i] end end
  return core.reshape(x, out)
end

-- ---------------------------------------------------------------- nn composites (core issue)

hl.nn = hl.nn or {}
function hl.nn.softmax(x, axis)
  x = as_array(x, "softmax")
  axis = axis or -1
  local m = hl.max(x, axis, true)
  m = hl.where(P.isfinite(m), m, 0)
  local e = hl.exp(x - m)
  return e / hl.sum(e, axis, true)
end
function hl.nn.log_softmax(x, axis)
  x = as_array(x, "log_softmax")
  axis = axis or -1
  return x - hl.logsumexp(x, axis, true)
end
hl.softmax = hl.nn.softmax

for _, name in ipairs {"mean", "logsumexp", "clip", "arange", "linspace", "eye"} do hl[name] = named(name, hl[name]) end
hl.nn.softmax = named("softmax", hl.nn.softmax)
hl.nn.log_softmax = named("log_softmax", hl.nn.log_softmax)
hl.softmax = hl.nn.softmax

-- ---------------------------------------------------------------- indexing

-- one axis spec -> start0, step, count, drop
local function axis_spec(spec, extent, axis, shape)
  if type(spec) == "number" then
    if spec ~= math.floor(spec) then fail("index: index %s is not an integer", tostring(spec)) end
    local i = spec < 0 and extent + spec or spec - 1
    if i < 0 or i >= extent then
      fail("index: index %d is out of range for axis %d of shape %s", spec, axis, shape_str(shape))
    end
    return i, 1, 1, true
  end
  if type(spec) ~= "table" then fail("index: axis %d: expected a number or a range table, got %s", axis, type(spec)) end
  local a, b, step = spec[1] or 1, spec[2] or -1, spec[3] or 1
  for _, v in ipairs {a, b, step} do
    if type(v) ~= "number" or v ~= math.floor(v) then
      fail("index: axis %d: range bounds and steps must be integers, got %s", axis, tostring(v))
    end
  end
  if step == 0 then fail("index: axis %d: step must not be 0", axis) end
  -- inclusive, 1-based, negatives from the end; clamped like string.sub
  if a < 0 then a = extent + a + 1 end
  if b < 0 then b = extent + b + 1 end
  if step > 0 then
    if spec[1] == nil then a = 1 end
    if spec[2] == nil then b = extent end
    a, b = math.max(a, 1), math.min(b, extent)
    local n = b >= a and math.floor((b - a) / step) + 1 or 0
    return a - 1, step, n, false
  else
    if spec[1] == nil then a = extent end
    if spec[2] == nil then b = 1 end
    a, b = math.min(a, extent), math.max(b, 1)
    local n = a >= b and math.floor((a - b) / -step) + 1 or 0
    return a - 1, step, n, false
  end
end

-- the slice a key selects: per-axis starts (0-based), steps and counts, and the result's shape
local function selection(x, key)
  local shape = x.shape
  local specs = type(key) == "table" and key or {key}
  if #specs > #shape then fail("index: %d indices for shape %s", #specs, shape_str(shape)) end
  local starts, steps, counts, out = {}, {}, {}, {}
  for d = 1, #shape do
    local s, st, n, drop = axis_spec(specs[d] or {}, shape[d], d, shape)
    if n == 0 then s = 0 end
    starts[d], steps[d], counts[d] = s, st, n
    if not drop then out[#out + 1] = n end
  end
  return starts, steps, counts, out
end

local function index(x, key)
  local starts, steps, counts, out = selection(x, key)
  local r = core.slice(x, starts, steps, counts)
  if #out ~= #counts then r = core.reshape(r, out) end
  return r
end

-- x:at(idx):set(v) and friends: functional updates. The new values are placed into x's shape by
-- the transpose of the slice (as autodiff does), then chosen by a mask, so an update is ordinary
-- ops: it traces into pipelines, and gradients flow to both x and v.
local updater = {}
updater.__index = updater
local function scatter(self, v, combine)
  local x = self.x
  local starts, steps, counts = selection(x, self.idx)
  local sel = core.reshape(core.slice(x, starts, steps, counts), counts)
  if type(v) ~= "number" and type(v) ~= "boolean" and not is_array(v) then
    fail("at: the update value must be a number, boolean or array, got %s", type(v))
  end
  if is_array(v) then
    local ok, err = pcall(hl.broadcast_to, v, select(4, selection(x, self.idx)))
    if not ok then
      fail("at: the update value of shape %s does not broadcast to the selection's shape %s", shape_str(v.shape),
           shape_str(select(4, selection(x, self.idx))))
    end
    v = core.reshape(err, counts)
  end
  local c = combine(sel, v)
  local new = is_array(c) and hl.broadcast_to(hl.astype(c, x.dtype), counts) or hl.fill_like(x, c, counts, x.dtype)
  local placed = hl.rules.unslice(new, x.shape, starts, steps)
  local mask = hl.rules.unslice(hl.fill_like(x, true, counts, "bool"), x.shape, starts, steps)
  return hl.where(mask, placed, x)
end
function updater:set(v) return scatter(self, v, function(_, b) return b end) end
function updater:add(v) return scatter(self, v, function(a, b) return a + b end) end
function updater:mul(v) return scatter(self, v, function(a, b) return a * b end) end
function updater:min(v) return scatter(self, v, function(a, b) return P.minimum(a, b) end) end
function updater:max(v) return scatter(self, v, function(a, b) return P.maximum(a, b) end) end
function methods.at(x, idx)
  return setmetatable({x = x, idx = idx}, updater)
end

-- ---------------------------------------------------------------- methods and metatable

for name, f in pairs(P) do methods[name] = f end
for _, name in ipairs {"sum", "prod", "max", "min", "argmax", "argmin", "mean", "logsumexp", "matmul", "dot",
                       "transpose", "reshape", "flatten", "broadcast_to", "expand_dims", "squeeze", "clip",
                       "astype", "eq", "ne", "lt", "le", "gt", "ge"} do
  methods[name] = hl[name]
end
methods.item = core.item
methods.to = hl.device_put
methods.totable = core.totable
methods.softmax = hl.nn.softmax

local property = core.property
mt.__index = function(x, k)
  local t = type(k)
  if t == "string" then
    local m = methods[k]
    if m then return m end
    if k == "T" then return hl.transpose(x) end
    local v = property(x, k)
    if v ~= nil then return v end
    fail("no field or method '%s' on an array", k)
  end
  return index(x, k)
end
mt.__newindex = function()
  fail("arrays are immutable: use x:at(index):set(value), which returns a new array")
end

local function tostring_array(x)
  if not is_array(x) then fail("tostring: argument 1 is a %s, expected an array", type(x)) end
  local dtype, shape, traced = core.info(x)
  if traced then
    return ok_format and format.tracer(dtype, shape) or string.format("<traced %s%s>", dtype, shape_str(shape))
  end
  if core.device_of(x) ~= CPU then x = core.to_device(x, CPU) end
  if ok_format then
    local get = core.get
    return format.array(function(i) return get(x, i) end, shape, dtype)
  end
  return string.format("hl.array(<%s%s>)", dtype, shape_str(shape))
end
mt.__tostring = tostring_array
hl.tostring = tostring_array

-- ---------------------------------------------------------------- jit

local function leaf_sig(v, i)
  local t = type(v)
  if t == "userdata" and is_array(v) then
    local dtype, shape = core.info(v)
    return dtype .. "@" .. core.device_of(v) .. "[" .. table.concat(shape, ",") .. "]"
  elseif t == "number" then
    return string.format("#%.17g", v)
  elseif t == "boolean" or t == "string" or t == "nil" then
    return "#" .. tostring(v)
  end
  fail("jit: argument %d holds a %s leaf; pass arrays or numbers, or mark it static with static_argnums", i, t)
end

local function static_sig(v)
  if type(v) == "table" then
    local leaves, def = tree.flatten(v)
    local parts = {def}
    for _, l in ipairs(leaves) do parts[#parts + 1] = type(l) == "number" and string.format("%.17g", l) or tostring(l) end
    return table.concat(parts, "|")
  end
  return type(v) == "number" and string.format("%.17g", v) or tostring(v)
end

-- the jit traces being built (innermost last) and the open autodiff tape, shared with ad.lua,
-- vmap.lua and control.lua
local tracing = require "halua.trace"

local jit_mt = {}
jit_mt.__index = jit_mt

-- signature, the flat list of traced arrays, and per-argument tree information
local function analyse(self, args, n)
  local parts, arrays, info = {}, {}, {}
  for i = 1, n do
    local a = args[i]
    if self.static[i] then
      parts[i] = "S" .. static_sig(a)
      info[i] = false
    elseif is_array(a) then
      arrays[#arrays + 1] = a
      parts[i] = leaf_sig(a, i)
      info[i] = true
    elseif type(a) == "table" then
      local leaves, def = tree.flatten(a)
      local lp = {def}
      for _, l in ipairs(leaves) do
        lp[#lp + 1] = leaf_sig(l, i)
        if is_array(l) then arrays[#arrays + 1] = l end
      end
      parts[i] = table.concat(lp, ";")
      info[i] = {def = def, leaves = leaves}
    else
      parts[i] = leaf_sig(a, i)
      info[i] = false
    end
  end
  return n .. "|" .. table.concat(parts, "|"), arrays, info
end

local log_compiles = (os.getenv("HALUA_LOG_COMPILES") or "0") ~= "0" and os.getenv("HALUA_LOG_COMPILES") ~= ""

-- Traces self.f on tracers standing for the arrays of args (on `device`): the trace, its traced
-- results in order, and where each sits in the results (slots), with the results' trees.
local function trace_call(self, args, n, info, device)
  local trace = core.trace_new()
  local targs = {}
  for i = 1, n do
    local a = args[i]
    if info[i] == true then
      local dtype, shape = core.info(a)
      targs[i] = core.trace_arg(trace, dtype, shape, device or core.device_of(a))
    elseif type(info[i]) == "table" then
      local leaves = {}
      for j, l in ipairs(info[i].leaves) do
        if is_array(l) then
          local dtype, shape = core.info(l)
          leaves[j] = core.trace_arg(trace, dtype, shape, device or core.device_of(l))
        else
          leaves[j] = l
        end
      end
      targs[i] = tree.unflatten(info[i].def, leaves)
    else
      targs[i] = a
    end
  end
  -- autodiff records onto the trace being built (ad.lua)
  local stack = tracing.stack
  stack[#stack + 1] = trace
  local ok, results = pcall(function() return pack(self.f(unpack(targs, 1, n))) end)
  stack[#stack] = nil
  if not ok then
    core.trace_close(trace)
    error(results, 0)
  end
  -- the outputs: tracers of this trace become pipeline outputs; anything else is returned as is
  local out_leaves, out_defs = {}, {}
  local traced, slots = {}, {}
  for r = 1, results.n do
    local leaves, def = tree.flatten(results[r])
    out_defs[r] = def
    out_leaves[r] = leaves
    for j, l in ipairs(leaves) do
      if core.is_tracer(l) then
        traced[#traced + 1] = l
        slots[#slots + 1] = {r, j}
      end
    end
  end
  return trace, traced, {nres = results.n, defs = out_defs, consts = out_leaves, slots = slots}
end

local function build(self, args, n, info, sig)
  if log_compiles then
    local others = 0
    for _ in pairs(self.cache) do others = others + 1 end
    io.stderr:write(string.format("halua: tracing %s: %s (signature %s)\n", self.name,
      others == 0 and "first call" or ("a new argument signature; " .. others .. " other(s) cached"), sig))
  end
  local trace, traced, entry = trace_call(self, args, n, info, self.device)
  entry.text = core.trace_text(trace, traced)
  -- results that do not depend on the arguments are returned as they are: nothing to compile
  if #traced > 0 then entry.program = core.program_build(trace, traced, self.name, self.schedule) end
  core.trace_close(trace)
  -- constants must not keep tracers alive
  for _, s in ipairs(entry.slots) do entry.consts[s[1]][s[2]] = false end
  self.cache[sig] = entry
  return entry
end

local function run(entry, arrays)
  local outs = entry.program and {core.program_run(entry.program, unpack(arrays))} or {}
  local results = {}
  for r = 1, entry.nres do
    local leaves = {}
    for j, l in ipairs(entry.consts[r]) do leaves[j] = l end
    results[r] = leaves
  end
  for k, s in ipairs(entry.slots) do results[s[1]][s[2]] = outs[k] end
  for r = 1, entry.nres do
    local def = entry.defs[r]
    results[r] = def == "*" and results[r][1] or tree.unflatten(def, results[r])
  end
  return unpack(results, 1, entry.nres)
end

local signature, program_run = core.signature, core.program_run

-- jit(f, {device = ...}): array arguments move to that device first
local function moved(self, ...)
  local n = select("#", ...)
  local args = {...}
  for i = 1, n do
    local a = args[i]
    if is_array(a) and not core.is_tracer(a) and core.device_of(a) ~= self.device then
      args[i] = core.to_device(a, self.device)
    elseif type(a) == "table" and not self.static[i] then
      args[i] = tree.map(function(l)
        if is_array(l) and not core.is_tracer(l) and core.device_of(l) ~= self.device then return core.to_device(l, self.device) end
        return l
      end, a)
    end
  end
  return unpack(args, 1, n)
end

-- in the shell a jitted function shows its name and how many signatures it has traced
function jit_mt:__tostring()
  local n = 0
  for _ in pairs(self.cache) do n = n + 1 end
  return string.format("<jit function %s: %d signature%s traced>", (self.name:gsub("^jit ", "")), n, n == 1 and "" or "s")
end

function jit_mt:__call(...)
  if self.device and not self.device_checked then
    device_id(self.device == CPU and "cpu" or "cuda", "jit")   -- the device must exist to run
    self.device_checked = true
  end
  if self.device then return self:call(moved(self, ...)) end
  return self:call(...)
end

function jit_mt:call(...)
  -- under an autodiff tape (hl.grad outside jit) the function runs op by op, recorded
  if tracing.tape then return self.f(...) end
  -- fast path: plain array arguments, a compiled entry whose results are arrays
  if not self.has_static then
    local sig = signature(...)
    local entry = sig and self.fast[sig]
    if entry then return program_run(entry.program, ...) end
  end
  local n = select("#", ...)
  local args = {...}
  for i = 1, n do
    -- called while tracing an enclosing function: inline
    if core.is_tracer(args[i]) then return self.f(...) end
    if type(args[i]) == "table" and not self.static[i] then
      for _, l in ipairs(tree.leaves(args[i])) do
        if core.is_tracer(l) then return self.f(...) end
      end
    end
  end
  local sig, arrays, info = analyse(self, args, n)
  local entry = self.cache[sig]
  if not entry then
    entry = build(self, args, n, info, sig)
    -- every argument an array or number, every result a traced array: the fast path applies
    local plain = not self.has_static and #entry.slots == entry.nres
    for r = 1, entry.nres do plain = plain and entry.defs[r] == "*" end
    local fsig = plain and entry.program and signature(...)
    if fsig then self.fast[fsig] = entry end
  end
  return run(entry, arrays)
end

local lowered_mt = {}
lowered_mt.__index = lowered_mt
function lowered_mt:ir() return self.entry.text end
local function program_of(self)
  if not self.entry.program then fail("lower: this function's results do not depend on its arguments: there is no pipeline") end
  return self.entry.program
end
function lowered_mt:stmt() return core.program_stmt(program_of(self)) end
function lowered_mt:compile_ms() return self.entry.program and core.program_compile_ms(self.entry.program) or 0 end
function lowered_mt:ptx() return core.program_ptx(program_of(self)) end
function lowered_mt:loop_ptx() return core.program_loop_ptx(program_of(self)) end
function lowered_mt:asm() return core.program_asm(program_of(self)) end
lowered_mt.__tostring = function(self) return self.entry.text end

function jit_mt:lower(...)
  local n = select("#", ...)
  local args = {...}
  local sig, _, info = analyse(self, args, n)
  local entry = self.cache[sig] or build(self, args, n, info, sig)
  return setmetatable({entry = entry}, lowered_mt)
end

function hl.jit(f, opts)
  if type(f) ~= "function" and not (type(f) == "table" and getmetatable(f) and getmetatable(f).__call) then
    fail("jit: expected a function, got %s", type(f))
  end
  opts = opts or {}
  local static = {}
  local sa = opts.static_argnums
  if type(sa) == "number" then sa = {sa} end
  for _, i in ipairs(sa or {}) do
    if type(i) ~= "number" or i < 1 or i ~= math.floor(i) then fail("jit: static_argnums must hold 1-based argument numbers") end
    static[i] = true
  end
  local device
  if opts.device ~= nil then
    -- checked when the function runs: lowering (and PTX checks) need no GPU
    if opts.device == "cpu" then device = CPU
    elseif type(opts.device) == "string" and (opts.device == "cuda" or opts.device == "cuda:1") then device = CUDA
    else fail("jit: unknown device %s (use \"cpu\" or \"cuda\")", tostring(opts.device)) end
  end
  -- schedule = "auto": Halide's Mullapudi2016 autoscheduler instead of halua's own (CPU only)
  if opts.schedule ~= nil and opts.schedule ~= "default" and opts.schedule ~= "auto" then
    fail("jit: schedule must be \"default\" or \"auto\" (Halide's Mullapudi2016 autoscheduler), got %s", tostring(opts.schedule))
  end
  if opts.schedule == "auto" and device == CUDA then
    fail("jit: schedule \"auto\" schedules CPU pipelines (Mullapudi2016); leave it out for cuda")
  end
  local info = type(f) == "function" and debug.getinfo(f, "S") or nil
  local name = opts.name or (info and info.short_src and ("jit " .. info.short_src .. ":" .. (info.linedefined or 0))) or "jit"
  return setmetatable({f = f, static = static, has_static = next(static) ~= nil, cache = {}, fast = {}, name = name,
                       device = device, schedule = opts.schedule == "auto" and "auto" or nil}, jit_mt)
end

-- hl.export(f, args, dir [, name]): f for the shapes and dtypes of args as a standalone C library
-- (engine/runtime/hl_export.h); the default name is dir's last component as a C identifier
function hl.export(f, args, dir, name)
  local jf
  if getmetatable(f) == jit_mt then jf = f
  elseif type(f) == "function" or (type(f) == "table" and getmetatable(f) and getmetatable(f).__call) then jf = hl.jit(f)
  else fail("export: expected a function or a jitted function, got %s", type(f)) end
  if type(args) ~= "table" or is_array(args) then
    fail("export: args must be a list of the function's arguments, such as {x} or {params, x}, got %s",
         is_array(args) and "an array" or type(args))
  end
  if type(dir) ~= "string" or dir == "" then fail("export: dir must be a directory path, got %s", type(dir)) end
  if name == nil then
    name = dir:gsub("/+$", ""):match("[^/]*$"):gsub("[^%w_]", "_")
    if name == "" then name = "halua_export" end
    if name:match("^%d") then name = "_" .. name end
  elseif type(name) ~= "string" then
    fail("export: name must be a string, got %s", type(name))
  end
  if jf.device == CUDA then fail("export: %s was jitted for cuda; exported libraries run on the CPU", jf.name) end
  local n = table.maxn(args)
  local _, _, info = analyse(jf, args, n)
  local trace, traced, entry = trace_call(jf, args, n, info, CPU)
  local ok, err = pcall(function()
    for _, s in ipairs(entry.slots) do entry.consts[s[1]][s[2]] = true end
    for r = 1, entry.nres do
      for j, l in ipairs(entry.consts[r]) do
        if l ~= true then
          fail("export: result %d%s does not depend on the arguments (a %s); every output of an exported library " ..
               "is computed from its inputs", r, #entry.consts[r] > 1 and (" (leaf " .. j .. ")") or "",
               is_array(l) and "constant array" or type(l))
        end
      end
    end
    if #traced == 0 then fail("export: %s returns nothing to compute", jf.name) end
    core.trace_export(trace, traced, dir, name)
  end)
  core.trace_close(trace)
  if not ok then error(err, 0) end
end

local trace_mt = {__tostring = function(self) return self.text end}
function hl.trace(f, ...)
  local jf = getmetatable(f) == jit_mt and f or hl.jit(f)
  local lowered = jf:lower(...)
  return setmetatable({text = lowered:ir()}, trace_mt)
end

-- a table, as docs/api.md says; its metatable only makes it print readably
local cache_info_mt = {__tostring = function(t)
  return string.format("{entries = %d, hits = %d, misses = %d, compile_ms = %.1f, disk_hits = %d, disk_misses = %d, " ..
                       "disk_bytes = %d, disk_load_ms = %.1f, disk_dir = %s}", t.entries, t.hits, t.misses, t.compile_ms,
                       t.disk_hits, t.disk_misses, t.disk_bytes, t.disk_load_ms, t.disk_dir and string.format("%q", t.disk_dir) or "nil")
end}
function hl.cache_info() return setmetatable(core.cache_info(), cache_info_mt) end
function hl.cache_clear(opts)
  if opts ~= nil and type(opts) ~= "table" then
    error("halua: cache_clear: options must be a table such as {disk = true}, got a " .. type(opts), 2)
  end
  for k in pairs(opts or {}) do
    if k ~= "disk" then error("halua: cache_clear: unknown option '" .. tostring(k) .. "'", 2) end
  end
  return core.cache_clear(opts ~= nil and opts.disk == true)
end
hl.methods = methods

-- the parts that live in their own files
require("halua.ops")(hl, core, {as_array = as_array, norm_axis = norm_axis, norm_axes = norm_axes,
                               named = named, methods = methods})
require("halua.io")(hl, core, {placed = placed})
require("halua.linalg")(hl, core, {as_array = as_array})
require("halua.sorting")(hl, core, {as_array = as_array, norm_axis = norm_axis, methods = methods})
local ad_internals
hl.rules, ad_internals = require("halua.ad")(hl, core)
hl.random = require("halua.random")(hl, core)
local vmap_internals = require("halua.vmap")(hl, core)
require("halua.control")(hl, core, {ad = ad_internals, batch_replay = vmap_internals.batch_replay,
                                    with_batch = vmap_internals.with_batch})
require("halua.nn")(hl, core, {as_array = as_array, named = named, methods = methods})
hl.optim = require("halua.optim")(hl, core, {named = named})
require("halua.help")(hl)

-- HALUA_DEVICE chooses the default device for a whole run (e.g. HALUA_DEVICE=cuda)
local env_device = os.getenv("HALUA_DEVICE")
if env_device and env_device ~= "" then hl.default_device(env_device) end

return hl
