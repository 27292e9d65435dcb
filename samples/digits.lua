-- Loads the 8x8 digits set (samples/data/digits.csv.gz): returns X (n x 64, float32, scaled to
-- [0,1]), y (n labels 0..9, a Lua table) for the first 80% (train) and the last 20% (test).
local hl = require "halua"
local M = {}

function M.load(path)
  path = path or (debug.getinfo(1, "S").source:match("^@(.*/)") or "./") .. "data/digits.csv.gz"
  local f = assert(io.popen("gzip -dc '" .. path .. "'"), "halua: digits: cannot read " .. path)
  local rows, labels = {}, {}
  for line in f:lines() do
    local v = {}
    for num in line:gmatch("[^,]+") do v[#v + 1] = tonumber(num) / 16 end
    labels[#labels + 1] = math.floor(table.remove(v) * 16 + 0.5)
    rows[#rows + 1] = v
  end
  f:close()
  if #rows == 0 then error("halua: digits: no rows read from " .. path, 0) end
  local ntrain = math.floor(#rows * 0.8)
  local function part(a, b)
    local r, l = {}, {}
    for i = a, b do
      r[#r + 1] = rows[i]
      l[#l + 1] = labels[i]
    end
    return hl.array(r), l
  end
  local xtr, ytr = part(1, ntrain)
  local xte, yte = part(ntrain + 1, #rows)
  return xtr, ytr, xte, yte
end

return M
