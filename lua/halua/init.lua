-- halua: the Lua face of the engine. The C module (halua_core) holds arrays, primitives and
-- compiled pipelines; this file adds NumPy-style argument handling, composites written with
-- primitives, indexing, printing and hl.jit.
local core = require "halua_core"
-- halua's own modules from their bytecode kept beside the engine library, parsed once per build
-- (engine/lua/hl_lua_modules.c); what is not found here is left to the other loaders. (Once per
-- process: a script that loads halua again keeps the one loader.)
if not core.module_loader then
  core.module_loader = function(name)
    if name:sub(1, 6) ~= "halua." then return nil end
    local path = package.searchpath(name, package.path)
    if not path then return nil end
    local chunk, err = core.load_module(name, path)
    if not chunk then error(("error loading module '%s' from file '%s':\n\t%s"):format(name, path, err), 0) end
    return chunk
  end
  table.insert(package.loaders, 2, core.module_loader)
end
local util = require "halua.util"
local symdim = require "halua.symdim"
local tree = require "halua.tree"
local ok_format, format = pcall(require, "halua.format")

local hl = {core = core, tree = tree}
local P = core.prims
local mt = core.array_mt
local methods = {}

local fail = util.fail
local is_array = core.is_array

for _, d in ipairs {"float32", "float64", "float16", "bfloat16", "int8", "int32", "int64", "uint8", "bool", "complex64", "complex128"} do
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
    error((msg:gsub("^halua: [%w_.]+: ", "halua: " .. op .. ": ", 1)), 0)
  end
end

-- an array from an array, a number or a boolean (as the primitives take them); anything else,
-- tables included, is op's error. A number becomes an array where arrays made from Lua values
-- start (hl.asarray: the default device), so that it meets the arrays of a run on the GPU there.
local function as_array(x, op, argn)
  if core.usable(x, op) then return x end
  local t = type(x)
  if t == "number" or t == "boolean" then return hl.asarray(x) end
  core.arg_error(op, argn or 1, x, "an array")
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
-- (a shape holding a dynamic size of hl.jit's dynamic_axes makes a constant of the trace being
-- built, sized by it: lua/halua/symdim.lua)
local function filled(shape, v, dtype)
  local anchor = symdim.anchor(shape)
  if anchor then return core.full(shape, v, dtype, anchor) end
  return placed(core.full(shape, v, dtype), "full")
end
function hl.full(shape, v, dtype) return filled(shape, v, dtype) end
function hl.zeros(shape, dtype) return filled(shape, 0, dtype or "float32") end
function hl.ones(shape, dtype) return filled(shape, 1, dtype or "float32") end
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
  if symdim.is_sym(start) or symdim.is_sym(stop) then
    -- a range sized by a dynamic size: whole steps, a length of (stop - start) / step
    if type(step) ~= "number" or step == 0 or step ~= math.floor(step) then
      fail("arange: with a dynamic size, step must be a non-zero whole number")
    end
    local span = step > 0 and stop - start or start - stop
    local lo, hi = symdim.bounds(span)
    if not lo or (lo <= 0 and hi > 0) then
      fail("arange: the range %s to %s is empty at some sizes and not at others", symdim.show(start), symdim.show(stop))
    end
    if hi <= 0 then span = 0 end   -- (empty at every size)
    local n = math.abs(step) == 1 and span or (type(span) == "number" and math.ceil(span / math.abs(step))
                                               or (span + math.abs(step) - 1):floordiv(math.abs(step)))
    local i = core.iota("float64", {n}, 0, symdim.anchor({n, start, stop}))
    return (i * step + start):astype(dtype or "int32")
  end
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
  -- (n a dynamic size: its traced value; the step 1 / (n - 1) makes the program specialised)
  n = symdim.concrete(n or 50)
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
  local anchor = symdim.anchor({n, m})
  local r = core.iota("int32", {n, m}, 0, anchor)
  local c = core.iota("int32", {n, m}, 1, anchor)
  if anchor then return hl.eq(r, c):astype(dtype or "float32") end
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

local norm_axis, norm_axes = util.norm_axis, util.norm_axes

local function mask_of(axes)
  local m = 0
  for _, a in ipairs(axes) do m = m + 2 ^ a end
  return m
end

local keep_shape = util.keep_shape

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
  -- a complex sum: both parts divided by the count
  if s.dtype == "complex64" or s.dtype == "complex128" then return core.view_as_complex(core.view_as_real(s) / count(x, axes)) end
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

-- reshape(x, {3, 4}) or reshape(x, 3, 4) (NumPy's a.reshape(3, 4))
function hl.reshape(x, shape, ...)
  x = as_array(x, "reshape")
  if select("#", ...) > 0 then
    if type(shape) ~= "number" then
      fail("reshape: pass the shape as one table {3, 4} or as extents 3, 4, not a %s followed by more", type(shape))
    end
    shape = {shape, ...}
  elseif type(shape) == "number" then
    shape = {shape}
  end
  shape = symdim.concrete(shape)
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
  spec = symdim.concrete(spec)
  if type(spec) == "number" then
    if spec ~= math.floor(spec) then fail("index: index %s is not an integer", tostring(spec)) end
    local i = spec < 0 and extent + spec or spec - 1
    if i < 0 or i >= extent then
      fail("index: index %d is out of range for axis %d of shape %s", spec, axis, shape_str(shape))
    end
    return i, 1, 1, true
  end
  if type(spec) ~= "table" then fail("index: axis %d: expected a number or a range table, got %s", axis, type(spec)) end
  spec = symdim.concrete(spec)
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
-- A key holding index arrays goes to indexing.lua's at_arrays instead: one scatter primitive.
local updater = {}
updater.__index = updater
local indexing
local function scatter(self, v, combine, mode)
  local x = self.x
  if indexing.has_array(self.idx) then return indexing.at_arrays(x, self.idx, v, mode) end
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
function updater:set(v) return scatter(self, v, function(_, b) return b end, "set") end
function updater:add(v) return scatter(self, v, function(a, b) return a + b end, "add") end
function updater:mul(v) return scatter(self, v, function(a, b) return a * b end, "mul") end
function updater:min(v) return scatter(self, v, function(a, b) return P.minimum(a, b) end, "min") end
function updater:max(v) return scatter(self, v, function(a, b) return P.maximum(a, b) end, "max") end
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
-- Lua's == on two arrays compares identity (it cannot return an array, and LuaJIT cannot overload
-- truth either). Two distinct concrete arrays are never ==, as before; a tracer compared inside
-- jit is a mistake halua can see, so it says what to use.
mt.__eq = function(a, b)
  if core.is_tracer(a) or core.is_tracer(b) then
    fail("==: Lua compares arrays by identity, not by value; use hl.eq(a, b) (or a:eq(b)) for elementwise " ..
         "equality, and hl.where or hl.cond to choose by it")
  end
  return false
end
hl.tostring = tostring_array

hl.methods = methods

-- the parts that live in their own files
require("halua.jit")(hl, core, {device_id = device_id})
require("halua.ops")(hl, core, {as_array = as_array, norm_axis = norm_axis, norm_axes = norm_axes,
                               named = named, methods = methods})
local numpy_shared = {as_array = as_array, norm_axis = norm_axis, norm_axes = norm_axes, named = named, methods = methods}
require("halua.numpy")(hl, core, numpy_shared)
require("halua.numpy_search")(hl, core, numpy_shared)
require("halua.numpy_shape")(hl, core, numpy_shared)
require("halua.io")(hl, core, {placed = placed})
indexing = require("halua.indexing")(hl, core, {as_array = as_array, axis_spec = axis_spec})
require("halua.complex")(hl, core, {as_array = as_array, methods = methods})
require("halua.sorting")(hl, core, {as_array = as_array, norm_axis = norm_axis, methods = methods})
local ad_internals
hl.rules, ad_internals = require("halua.ad")(hl, core)
hl.random = require("halua.random")(hl, core, {named = named, ad = ad_internals})
local vmap_internals = require("halua.vmap")(hl, core)
require("halua.jac")(hl, core, ad_internals)
require("halua.control")(hl, core, {ad = ad_internals, batch_replay = vmap_internals.batch_replay,
                                    with_batch = vmap_internals.with_batch})
require("halua.checkpoint")(hl, core, ad_internals)
require("halua.lax")(hl, core, {methods = methods, named = named})
require("halua.nn")(hl, core, {as_array = as_array, named = named, methods = methods})
require("halua.nn_conv")(hl, core, {as_array = as_array, named = named})
require("halua.nn_layers")(hl, core, {as_array = as_array, named = named})
require("halua.help")(hl)

-- Namespaces loaded on their first use: their modules add nothing outside hl.fft, hl.linalg,
-- hl.optim and hl.dist (their derivative rules live in rules.lua, which reaches hl.linalg only
-- when a rule runs). Lua's collector walks every live object and string at each full
-- collection, and the engine runs one after every 2 MiB of small arrays (hl_lua_value.c): each
-- module not loaded is heap those collections skip. hl.help loads them all before listing
-- (help.lua), through load_all.
local lazy = {
  fft = function() require("halua.fft")(hl, core, {as_array = as_array}) end,
  linalg = function() require("halua.linalg")(hl, core, {as_array = as_array}) end,
  optim = function() hl.optim = require("halua.optim")(hl, core, {named = named}) end,
  dist = function() require("halua.dist")(hl, core, {as_array = as_array}) end,
}
setmetatable(hl, {
  __index = function(t, k)
    local load = lazy[k]
    if not load then return nil end
    lazy[k] = nil
    load()
    return rawget(t, k)
  end,
  load_all = function()
    for k in pairs(lazy) do local _ = hl[k] end   -- (clearing a visited key is allowed in pairs)
  end,
})

-- HALUA_DEVICE chooses the default device for a whole run (e.g. HALUA_DEVICE=cuda)
local env_device = os.getenv("HALUA_DEVICE")
if env_device and env_device ~= "" then hl.default_device(env_device) end

return hl
