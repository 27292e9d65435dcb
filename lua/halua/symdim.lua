-- Dynamic sizes: what x.shape holds for the dynamic axes of hl.jit(f, {dynamic_axes = ...}) while
-- f is traced. The engine traces f at made-up sizes of those axes and fits its program's sizes
-- as functions of them (engine/core/hl_symbolic.h); here, a size is an affine expression of the
-- symbols (b, c, ...) that prints as one, computes with numbers and other sizes (+, -, *, exact /,
-- floordiv, %), and answers a comparison only where every size gives the same answer: a Lua
-- branch on a traced size would fix the program to one size without a word, so it is an error.
-- Where a number is taken (a shape, an operand, a slice bound), the engine reads the size's
-- value in the trace being built (the "halua.symdim" hook).
local ffi = require "ffi"
local util = require "halua.util"
local fail = util.fail

local M = {}

ffi.cdef "typedef struct { int32_t id; } halua_symdim;"

-- the made-up sizes: multiples of 840, so that a division by 2..8 is exact while tracing; far
-- from the sizes programs use, so that the shapes of intermediate values can be read back as
-- expressions of the symbols; small enough that four of them multiply within an array's bound
local function marker(j, trace)
  local q = {19, 27, 35, 43}
  -- trace 0: the base; trace j: symbol j moved by one step; the last: every symbol moved
  local step = 0
  if trace == j then step = 1 elseif trace == "check" then step = 2 + j end
  return 840 * (q[j] + step)
end
M.marker = marker
M.max_symbols = 4

-- The trace being built (one at a time: a nested jit inlines): names of its symbols, their
-- markers in this trace, the engine's id of its graph, a tracer of it for constants, what its
-- symbols stand for (for messages), and the guards (divisibility) the program relies on.
local ctx = nil
local generation = 0

local exprs = {}   -- id -> {c = number, a = {[j] = coefficient}} or {opaque = text, value = number}
local nexprs = 0

local Sym

local function new(e)
  nexprs = nexprs + 1
  e.gen = generation
  exprs[nexprs] = e
  return Sym(nexprs)
end

local function expr_of(d)
  local e = exprs[d.id]
  if not e or e.gen ~= generation or not ctx then
    fail("jit: a dynamic size was used after the jitted function that traced it returned; sizes of dynamic_axes " ..
         "exist only while the function is traced")
  end
  return e
end

local function is_sym(v) return type(v) == "cdata" and ffi.istype("halua_symdim", v) end
M.is_sym = is_sym

-- an affine form from a number or a size (nil for an opaque size)
local function affine(v)
  if type(v) == "number" then return {c = v, a = {}} end
  local e = expr_of(v)
  if e.opaque then return nil end
  return e
end

local function value_of(e)
  if e.opaque then return e.value end
  local v = e.c
  for j, a in pairs(e.a) do v = v + a * ctx.markers[j] end
  return v
end

-- an affine form as a size, or a number when no symbol is left
local function make(c, a)
  local any = false
  for j, x in pairs(a) do
    if x == 0 then a[j] = nil else any = true end
  end
  if not any then return c end
  return new({c = c, a = a})
end

local function text(e)
  if e.opaque then return e.opaque end
  local parts = {}
  for j = 1, #ctx.names do
    local a = e.a[j]
    if a then
      local s = a == 1 and ctx.names[j] or a == -1 and ("-" .. ctx.names[j]) or
                (math.abs(a - math.floor(a)) < 1e-12 and string.format("%d*%s", a, ctx.names[j])
                 or string.format("%s/%d", ctx.names[j], math.floor(1 / a + 0.5)))
      if #parts > 0 then s = s:sub(1, 1) == "-" and (" - " .. s:sub(2)) or (" + " .. s) end
      parts[#parts + 1] = s
    end
  end
  if e.c ~= 0 then parts[#parts + 1] = e.c < 0 and string.format(" - %d", -e.c) or string.format(" + %d", e.c) end
  return table.concat(parts)
end
local function show(v) return type(v) == "number" and string.format("%.17g", v) or text(expr_of(v)) end

local function opaque(txt, v) return new({opaque = txt, value = v}) end

local function num_value(v) return type(v) == "number" and v or value_of(expr_of(v)) end

local function check_operand(v, op)
  if type(v) ~= "number" and not is_sym(v) then
    fail("jit: %s of a dynamic size and a %s (sizes compute with numbers and other sizes)", op, type(v))
  end
end

local function add(x, y, sign)
  local ex, ey = affine(x), affine(y)
  if not ex or not ey then
    return opaque("(" .. show(x) .. (sign > 0 and " + " or " - ") .. show(y) .. ")", num_value(x) + sign * num_value(y))
  end
  local a = {}
  for j, v in pairs(ex.a) do a[j] = v end
  for j, v in pairs(ey.a) do a[j] = (a[j] or 0) + sign * v end
  return make(ex.c + sign * ey.c, a)
end

local function mul(x, y)
  local ex, ey = affine(x), affine(y)
  if ex and ey and (next(ex.a) == nil or next(ey.a) == nil) then
    local k, e = next(ex.a) == nil and ex.c or ey.c, next(ex.a) == nil and ey or ex
    local a = {}
    for j, v in pairs(e.a) do a[j] = v * k end
    return make(e.c * k, a)
  end
  -- a product of two sizes: a number of elements, not a shape the program can keep symbolic
  return opaque(show(x) .. "*" .. show(y), num_value(x) * num_value(y))
end

-- the guard a division relies on: (value of e) mod k == r at every size the program serves
local function guard(e, k, r)
  ctx.guards[#ctx.guards + 1] = {c = e.c, a = e.a, k = k, r = r}
end

local function divide(x, k, floor)
  if type(k) ~= "number" then fail("jit: a size divided by a dynamic size (%s / %s) is not a size the program can keep", show(x), show(k)) end
  if k <= 0 or k ~= math.floor(k) then fail("jit: a dynamic size divides by a positive whole number, got %s", show(k)) end
  local e = affine(x)
  if not e then return opaque(show(x) .. (floor and " // " or " / ") .. k, (floor and math.floor or function(v) return v end)(num_value(x) / k)) end
  -- every traced size is a multiple of 840: the remainder is the constant term's, at those sizes
  local r = e.c % k
  if not floor and r ~= 0 then fail("jit: (%s) / %d is not a whole size (use d:floordiv(%d))", text(e), k, k) end
  guard(e, k, r)
  local a = {}
  for j, v in pairs(e.a) do a[j] = v / k end
  return make((e.c - r) / k, a)
end

-- Comparisons: true or false where every size (each symbol at least 1) gives that answer
local function undecided(x, op, y)
  local what = {}
  for j = 1, #ctx.names do what[#what + 1] = ctx.names[j] .. " (" .. ctx.origin[j] .. ")" end
  fail("jit: %s %s %s depends on the dynamic size%s %s: a Lua branch on a traced size would fix the program to one " ..
       "size; mark the argument static (static_argnums), leave that axis out of dynamic_axes, or choose with hl.cond or " ..
       "hl.where", show(x), op, show(y), #what > 1 and "s" or "", table.concat(what, ", "))
end

-- the least and greatest value of x - y over every size (nil for an opaque size)
local range
-- the least and greatest value a size (or a number) takes over every size: -inf/inf where it has
-- no bound, nil for an opaque size
function M.bounds(v) return range(v, 0) end
function range(x, y)
  local d = add(x, y, -1)
  if type(d) == "number" then return d, d end
  local e = affine(d)
  if not e then return nil end
  local lo, hi = e.c, e.c
  for _, a in pairs(e.a) do
    if a > 0 then lo, hi = lo and lo + a, nil else hi, lo = hi and hi + a, nil end
  end
  return lo or -math.huge, hi or math.huge
end

local mt = {}
mt.__index = {}
function mt.__add(x, y) check_operand(x, "+"); check_operand(y, "+"); return add(x, y, 1) end
function mt.__sub(x, y) check_operand(x, "-"); check_operand(y, "-"); return add(x, y, -1) end
function mt.__mul(x, y) check_operand(x, "*"); check_operand(y, "*"); return mul(x, y) end
function mt.__div(x, y) check_operand(x, "/"); check_operand(y, "/"); return divide(x, y, false) end
function mt.__mod(x, k)
  if not is_sym(x) or type(k) ~= "number" then fail("jit: %% takes a dynamic size and a positive whole number") end
  if k <= 0 or k ~= math.floor(k) then fail("jit: a dynamic size's %% takes a positive whole number, got %s", show(k)) end
  local e = affine(x)
  if not e then fail("jit: %s %% %d: the remainder of this size is not known while tracing", show(x), k) end
  local r = e.c % k
  guard(e, k, r)
  return r
end
function mt.__unm(x) return mul(x, -1) end
function mt.__pow() fail("jit: a dynamic size raised to a power is not a size the program can keep") end
function mt.__eq(x, y)
  if not (type(x) == "number" or is_sym(x)) or not (type(y) == "number" or is_sym(y)) then return false end
  if ctx and ctx.check then return num_value(x) == num_value(y) end
  local lo, hi = range(x, y)
  if lo and lo == 0 and hi == 0 then return true end
  if lo and (lo > 0 or hi < 0) then return false end
  undecided(x, "==", y)
end
function mt.__lt(x, y)
  check_operand(x, "<"); check_operand(y, "<")
  if ctx and ctx.check then return num_value(x) < num_value(y) end
  local lo, hi = range(x, y)
  if lo and hi < 0 then return true end
  if lo and lo >= 0 then return false end
  undecided(x, "<", y)
end
function mt.__le(x, y)
  check_operand(x, "<="); check_operand(y, "<=")
  if ctx and ctx.check then return num_value(x) <= num_value(y) end
  local lo, hi = range(x, y)
  if lo and hi <= 0 then return true end
  if lo and lo > 0 then return false end
  undecided(x, "<=", y)
end
function mt.__tostring(x) return text(expr_of(x)) end
function mt.__concat(x, y)
  return (is_sym(x) and text(expr_of(x)) or tostring(x)) .. (is_sym(y) and text(expr_of(y)) or tostring(y))
end
function mt.__len() fail("jit: # of a dynamic size (a size is not a table)") end
function mt.__call() fail("jit: a dynamic size is not a function") end
-- d:floordiv(k): the whole part of d / k (Lua 5.1 has no //)
function mt.__index.floordiv(x, k) return divide(x, k, true) end
-- d:value() is refused with the way out: the value is not known while tracing
function mt.__index.value(x)
  fail("jit: the value of the dynamic size %s is not known while tracing (every size shares one program): mark the " ..
       "argument static (static_argnums) or leave that axis out of dynamic_axes to compute with it in Lua", show(x))
end
Sym = ffi.metatype("halua_symdim", mt)

-- Read a number of a traced shape back as a size: v = a * marker + c for one symbol, small c.
-- An extent of an argument's static axis stays a number (a static 16000 is not b + 40 in the
-- trace whose b is 15960; a size that one trace reads as a number is a size in the others).
-- v as a * markers[j] + c for one symbol j, a small multiple and a small offset: j, a, c (nil
-- when v is no such number)
local function as_marker_multiple(v, markers, positive)
  for j = 1, #markers do
    local a = math.floor(v / markers[j] + 0.5)
    local c = v - a * markers[j]
    if a ~= 0 and (a > 0 or not positive) and math.abs(a) <= 16 and math.abs(c) <= 64 then return j, a, c end
  end
end

local function decode(v)
  if ctx.static[v] then return v end
  local j, a, c = as_marker_multiple(v, ctx.markers)
  if j then return make(c, {[j] = a}) end
  return v
end

-- the engine's hooks (engine/lua/hl_lua.c): a size's value where a number is taken, and the
-- shape (or size) of a tracer of the trace being built
local registry = debug.getregistry()
registry["halua.symdim"] = function(d)
  if not is_sym(d) then return nil end
  return num_value(d)
end
-- halua's own functions compute with the traced sizes as numbers (the engine's fit finds how
-- their results follow the symbols, and a program that differs between sizes is refused); the
-- function being traced sees sizes, so that its Lua branches on them are checked
-- (halua's own modules are the files beside this one: a user's module in a folder that happens
-- to be named halua is the function being traced, whose branches on sizes must be checked)
local library_dir = debug.getinfo(1, "S").source:match("^(@.*[/\\])[^/\\]+$")
local function from_library()
  -- (past this function, the hook, the engine's property reader and the arrays' __index)
  for level = 3, 8 do
    local info = debug.getinfo(level, "Sn")
    if not info then return false end
    if info.what ~= "C" and info.namewhat ~= "metamethod" then
      local src = info.source
      return library_dir ~= nil and src:sub(1, #library_dir) == library_dir and src:sub(#library_dir + 1):match("^[%w_]+%.lua$") ~= nil
    end
  end
  return false
end
-- (set only while a polymorphic trace is built: other traces read their shapes in C alone)
local function shape_hook(shape, graph, want_size)
  if not ctx or graph ~= ctx.trace_id or from_library() then
    if want_size then
      local n = 1
      for _, v in ipairs(shape) do n = n * v end
      return n
    end
    return shape
  end
  for k, v in ipairs(shape) do shape[k] = decode(v) end
  if want_size then
    local n = 1
    for _, v in ipairs(shape) do n = is_sym(v) and mul(v, n) or (is_sym(n) and mul(n, v) or n * v) end
    return n
  end
  return shape
end

-- Begin tracing with symbols `names` (their `origin` for messages) at `trace` (0, j or "check"):
-- the trace's id (core.trace_id) and one of its tracers, for constants made from sizes.
-- `static` (a set) holds the extents of the arguments' static axes, which are read as numbers.
-- `check` = {sizes = the call's, made = trace 0's record of which creations it made in the
-- trace}: the trace at a call's own sizes that checks the polymorphic program (jit.lua's
-- poly_entry). Its sizes are the call's; comparisons take their values (the traces at made-up
-- sizes answered them for every size, or raised); and a creation function makes its value in the
-- trace exactly where trace 0 did, in the same order (reading sizes back from numbers is
-- ambiguous at small sizes), so the check compares like with like.
function M.begin(names, origin, trace, trace_id, static, check)
  generation = generation + 1
  exprs, nexprs = {}, 0
  local markers = {}
  for j = 1, #names do markers[j] = check and check.sizes[j] or marker(j, trace) end
  ctx = {names = names, origin = origin, markers = markers, trace_id = trace_id, guards = {}, static = static or {},
         check = check ~= nil, made = check and check.made or {}, creations = 0}
  registry["halua.symdim_shape"] = shape_hook
end
function M.set_anchor(tracer) ctx.anchor = tracer end
-- end the trace: its guards, and which of its creation calls made their value in the trace
function M.finish()
  local g, made = ctx and ctx.guards or {}, ctx and ctx.made or {}
  ctx = nil
  registry["halua.symdim_shape"] = nil
  generation = generation + 1
  exprs, nexprs = {}, 0
  return g, made
end

-- A tracer of the trace being built when `shape` (a table or a size) holds a dynamic size: the
-- creation functions then make their value inside the trace (a constant of the program, sized
-- by the symbols) rather than as a concrete array of the made-up size.
function M.anchor(shape)
  if not ctx then return nil end
  ctx.creations = ctx.creations + 1
  if ctx.check then return ctx.made[ctx.creations] and ctx.anchor or nil end
  local sized = is_sym(shape)
  if type(shape) == "table" then
    for _, v in ipairs(shape) do sized = sized or is_sym(v) end
  end
  ctx.made[ctx.creations] = sized
  return sized and ctx.anchor or nil
end

-- whether `sizes` (the symbols' values at a call) meet the guards the program relies on
function M.guards_hold(guards, sizes)
  for _, g in ipairs(guards) do
    local v = g.c
    for j, a in pairs(g.a) do v = v + a * sizes[j] end
    if v % g.k ~= g.r then return false end
  end
  return true
end

-- a size as the number it is in the trace being built (halua's functions taking sizes from the
-- caller); tables of sizes entry by entry
function M.concrete(v)
  if is_sym(v) then return num_value(v) end
  if type(v) == "table" then
    local any = false
    for _, e in ipairs(v) do any = any or is_sym(e) end
    if not any then return v end
    local out = {}
    for k, e in pairs(v) do out[k] = is_sym(e) and num_value(e) or e end
    return out
  end
  return v
end

-- An error met while tracing at made-up sizes, in terms of the symbols: each made-up size (or a
-- small multiple or offset of one) in the message becomes its expression, and what the symbols
-- stand for is said once.
local function rename(msg, names)
  local found = false
  for _, trace in ipairs {0, 1, 2, 3, 4, "check"} do
    local markers = {}
    for j = 1, #names do markers[j] = marker(j, trace) end
    msg = msg:gsub("%d+", function(digits)
      local j, a, c = as_marker_multiple(tonumber(digits), markers, true)
      if not j then return nil end
      found = true
      local s = (a == 1 and "" or (a .. "*")) .. names[j]
      if c ~= 0 then s = s .. (c > 0 and "+" or "-") .. math.abs(c) end
      return s
    end)
  end
  return msg, found
end
-- a polymorphic program's text (hl.trace, jf:lower(...):ir()) in terms of its symbols
function M.rename(text, names) return (rename(text, names)) end
function M.explain(err, names, origin)
  local msg, found = rename(tostring(err), names)
  if not found then return msg end
  local what = {}
  for j = 1, #names do what[j] = names[j] .. " = " .. origin[j] end
  return msg .. " (under dynamic_axes, " .. table.concat(what, ", ") .. "; sizes that meet in an operation must be " ..
         "one size: pass equal sizes there, or leave one of them out of dynamic_axes)"
end

M.show = function(v) return is_sym(v) and text(expr_of(v)) or tostring(v) end
return M
