-- What specs check errors with.
local assert = require "luassert"   -- (a required module sees Lua's own assert, not the spec's)
local M = {}

-- the message of the error f(...) raises (a failed assertion when it raises none)
function M.err_of(f, ...)
  local ok, e = pcall(f, ...)
  assert.is_false(ok, "expected an error")
  return tostring(e)
end

-- asserts that msg holds part (a plain find)
function M.has(msg, part) assert.is_truthy(msg:find(part, 1, true), "message '" .. msg .. "' lacks '" .. part .. "'") end

return M
