-- What every module shares: errors in halua's form, shapes and types as text, argument packing.
local M = {}

-- raises "halua: <formatted message>" with no position prefix (the caller's file would be halua's)
function M.fail(msg, ...) error("halua: " .. string.format(msg, ...), 0) end

function M.shape_str(s)
  local parts = {}
  for i, e in ipairs(s) do parts[i] = tostring(e) end
  return "[" .. table.concat(parts, ",") .. "]"
end

function M.type_str(x) return x.dtype .. M.shape_str(x.shape) end

function M.pack(...) return {n = select("#", ...), ...} end

function M.is_callable(f)
  if type(f) == "function" then return true end
  local mt = getmetatable(f)
  return mt ~= nil and mt.__call ~= nil
end

return M
