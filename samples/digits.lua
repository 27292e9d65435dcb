-- Loads the 8x8 digits set (samples/data/digits.csv.gz): returns X (n x 64, float32, scaled to
-- [0,1]), y (n labels 0..9, a Lua table) for a fixed random 80% (train) and
-- the other 20% (test); and
-- now(), a wall clock for the samples' timings.
local hl = require "halua"
local M = {}

-- wall-clock seconds (os.clock counts CPU time, which parallel pipelines multiply)
local ffi = require "ffi"
pcall(ffi.cdef, "typedef struct { long tv_sec; long tv_nsec; } halua_sample_timespec; int clock_gettime(int, halua_sample_timespec *);")
local ts = ffi.new("halua_sample_timespec")
function M.now()
  ffi.C.clock_gettime(1, ts)   -- CLOCK_MONOTONIC
  return tonumber(ts.tv_sec) + tonumber(ts.tv_nsec) * 1e-9
end

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
  -- the held-out fifth is a random one (a fixed shuffle): the file is ordered by writer, and its
  -- last fifth alone would test on writers never seen in training
  local order = {}
  for i = 1, #rows do order[i] = i end
  local state = 12345
  for i = #order, 2, -1 do
    state = (1103515245 * state + 12345) % 2147483648   -- a fixed LCG: the same split everywhere
    local j = state % i + 1
    order[i], order[j] = order[j], order[i]
  end
  local ntrain = math.floor(#rows * 0.8)
  local function part(a, b)
    local r, l = {}, {}
    for i = a, b do
      r[#r + 1] = rows[order[i]]
      l[#l + 1] = labels[order[i]]
    end
    return hl.array(r), l
  end
  local xtr, ytr = part(1, ntrain)
  local xte, yte = part(ntrain + 1, #rows)
  return xtr, ytr, xte, yte
end

return M
