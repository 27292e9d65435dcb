-- Whole files as strings, for specs that write, damage and read files.
local M = {}

-- the bytes of path (an error when it cannot be read)
function M.read_bytes(path)
  local f = assert(io.open(path, "rb"))
  local s = f:read("*a")
  f:close()
  return s
end

function M.write_bytes(path, s)
  local f = assert(io.open(path, "wb"))
  f:write(s)
  f:close()
end

return M
