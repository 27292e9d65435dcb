-- halua's shell (scripts/halua with no arguments): a read-eval-print loop like LuaJIT's own, with
-- `hl` loaded, and two differences that matter when exploring:
--   * a bare expression shows its value (`x:sum()`, not `=x:sum()` or `print(x:sum())`), and
--     plain tables show their contents ({2, 3} for x.shape);
--   * an error from halua shows as its one line ("halua: reshape: ..."): LuaJIT's REPL adds a
--     stack traceback to every error, which here would be halua's internals. Other errors keep
--     the traceback when they come from a file (a bug there is worth locating).
-- As in LuaJIT's REPL each line is a chunk of its own: a local does not outlive its line, so
-- keep values in globals (x = hl.ones(3)).
local M = {}

local function pack(...) return {n = select("#", ...), ...} end

-- a short, one-level rendering of a plain table; values with __tostring (arrays) use it
local function show(v, depth)
  if type(v) == "string" and depth then return string.format("%q", v) end
  if type(v) ~= "table" or (getmetatable(v) and getmetatable(v).__tostring) then return tostring(v) end
  depth = depth or 0
  if depth > 1 then return "{...}" end
  local parts, n = {}, #v
  for i = 1, math.min(n, 20) do parts[#parts + 1] = show(v[i], depth + 1) end
  if n > 20 then parts[#parts + 1] = "... (" .. n .. " items)" end
  local keys = {}
  for k in pairs(v) do
    if not (type(k) == "number" and k >= 1 and k <= n and k == math.floor(k)) then keys[#keys + 1] = k end
  end
  table.sort(keys, function(a, b) return tostring(a) < tostring(b) end)
  for i, k in ipairs(keys) do
    if i > 20 then parts[#parts + 1] = "..." break end
    local key = type(k) == "string" and k:match("^[%a_][%w_]*$") and k or "[" .. show(k, 2) .. "]"
    parts[#parts + 1] = key .. " = " .. show(v[k], depth + 1)
  end
  return "{" .. table.concat(parts, ", ") .. "}"
end
M.show = show

-- the chunk is incomplete (more lines to come) when the parser stopped at the end of input
local function at_eof(err) return err:sub(-7) == "'<eof>'" end

-- an expression first (so its value shows), then a statement; "=expr" as in Lua 5.1. Returns
-- the function, or nil, the statement's error and whether more lines could complete either.
local function compile(src)
  if src:sub(1, 1) == "=" then src = "return " .. src:sub(2) end
  local f, expr_err = loadstring("return " .. src, "=stdin")
  if f then return f end
  local g, err = loadstring(src, "=stdin")
  if g then return g end
  return nil, err, at_eof(err) or at_eof(expr_err)
end

-- what to show for an error: halua's errors and errors in what was typed are one line; others
-- also get the traceback, less this file's frames
local function report(err, trace)
  local msg = type(err) == "string" and err or tostring(err)
  if msg:find("^halua: ") or msg:find("^stdin:%d+:") or msg == "interrupted!" then return msg end
  local lines = {msg}
  for line in trace:gmatch("[^\n]+") do
    if line:find("halua/repl.lua", 1, true) or line:find("in function 'xpcall'", 1, true) then break end
    if line ~= msg then lines[#lines + 1] = line end
  end
  return table.concat(lines, "\n")
end

-- Ctrl-C: luajit interrupts running Lua code with a SIGINT handler that it installs around the
-- script and that resets itself to the default after one signal. Keep the default (quit) at the
-- prompt, as LuaJIT's REPL does, and put the handler back for each evaluation.
local function interrupts()
  local ok, ffi = pcall(require, "ffi")
  if not ok or ffi.os ~= "Linux" then return function() end, function() end end
  pcall(ffi.cdef, "typedef void (*halua_sighandler)(int); halua_sighandler signal(int, halua_sighandler);")
  local SIGINT, default = 2, ffi.cast("halua_sighandler", 0)
  local luajit_handler = ffi.C.signal(SIGINT, default)
  if luajit_handler == default then return function() end, function() end end
  return function() ffi.C.signal(SIGINT, luajit_handler) end, function() ffi.C.signal(SIGINT, default) end
end

-- run({input = file, output = file}): reads lines until the end of input
function M.run(opts)
  opts = require("halua.util").options("repl.run", opts, {"input", "output"})
  local input, output = opts.input or io.stdin, opts.output or io.stdout
  _G.hl = _G.hl or require "halua"
  local arm, disarm = interrupts()
  disarm()
  local function say(s) output:write(s, "\n") end
  local function eval(src)
    local f, err, more = compile(src)
    if not f then return false, err, more end
    local trace
    arm()
    local r = pack(xpcall(f, function(e)
      trace = debug.traceback("", 2)
      return e
    end))
    disarm()
    if not r[1] then
      say(report(r[2], trace or ""))
      return true
    end
    if r.n > 1 then
      local parts = {}
      for i = 2, r.n do parts[#parts + 1] = show(r[i]) end
      say(table.concat(parts, "\t"))
    end
    return true
  end
  local pending
  while true do
    output:write(pending and ">> " or "> ")
    output:flush()
    local line = input:read("*l")
    if not line then
      output:write("\n")
      break
    end
    local src = pending and pending .. "\n" .. line or line
    -- an interrupt can land outside the evaluation too; it must not end the shell
    local ok, done_or_err, err, more = pcall(eval, src)
    if not ok then
      say(report(done_or_err, ""))
      pending = nil
    elseif done_or_err then
      pending = nil
    elseif more then
      pending = src
    else
      say(err)
      pending = nil
    end
  end
  arm()   -- luajit's handler, as it was when the shell started
end

return M
