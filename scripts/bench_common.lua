-- What scripts/bench.lua and scripts/bench_compile.lua share: a monotonic clock, best-of timing,
-- and the performance issue's MLP (784 -> 1024 -> 1024 -> 10, batch 256, float32).
-- Require it after any environment the engine reads (HALUA_CACHE_DIR) is set: it loads halua.
local hl = require "halua"
local ffi = require "ffi"
ffi.cdef [[typedef struct { long tv_sec; long tv_nsec; } hl_timespec; int clock_gettime(int, hl_timespec *);]]
local M = {}

local ts = ffi.new("hl_timespec")
function M.now()
  ffi.C.clock_gettime(1, ts)
  return tonumber(ts.tv_sec) + tonumber(ts.tv_nsec) * 1e-9
end

-- the best time of `reps` rounds of `inner` calls, per call, after a full collection and one
-- untimed call
function M.best_of(f, reps, inner)
  -- the rows before leave their arrays to the collector (64 MB each for the 4096x4096 rows), where
  -- NumPy and PyTorch free theirs at once: collected here, so that a row does not pay for them
  collectgarbage()
  collectgarbage()
  f()
  local best = math.huge
  for _ = 1, reps do
    local t0 = M.now()
    for _ = 1, inner do f() end
    best = math.min(best, (M.now() - t0) / inner)
  end
  return best
end

-- Writes `first .. "\n" .. body .. "\n" .. last` into the file at `path` in place of the block
-- between those two marker lines, or, where there is none yet, at the end under "## heading".
function M.write_block(path, first, last, body, heading)
  local f = assert(io.open(path))
  local old = f:read("*a")
  f:close()
  local block = first .. "\n" .. body .. "\n" .. last
  local a, b = old:find(first, 1, true), select(2, old:find(last, 1, true))
  local new = a and b and (old:sub(1, a - 1) .. block .. old:sub(b + 1)) or (old .. "\n## " .. heading .. "\n\n" .. block .. "\n")
  f = assert(io.open(path, "w"))
  f:write(new)
  f:close()
end

-- float32 values uniform in [-scale/2, scale/2) from Lua's generator (seeded by the caller)
function M.uniform(shape, scale)
  local n, t = 1, {}
  for _, v in ipairs(shape) do n = n * v end
  for i = 1, n do t[i] = (math.random() - 0.5) * scale end
  return hl.reshape(hl.array(t), shape)
end

-- the MLP on `dev`: params, a batch, one-hot labels, its loss and an SGD step (loss, new params)
function M.mlp_setup(dev)
  math.randomseed(1)
  local uniform = M.uniform
  local params = {w1 = uniform({784, 1024}, 0.1), b1 = hl.zeros(1024),
                  w2 = uniform({1024, 1024}, 0.06), b2 = hl.zeros(1024),
                  w3 = uniform({1024, 10}, 0.1), b3 = hl.zeros(10)}
  for k, v in pairs(params) do params[k] = (v + 0):to(dev) end
  local batch = uniform({256, 784}, 2):to(dev)
  local labels = {}
  for i = 1, 256 do labels[i] = {} for j = 1, 10 do labels[i][j] = (i % 10 == j - 1) and 1 or 0 end end
  labels = hl.array(labels):to(dev)
  local function mlp_loss(p, x, y)
    local h = hl.maximum(hl.matmul(x, p.w1) + p.b1, 0)
    h = hl.maximum(hl.matmul(h, p.w2) + p.b2, 0)
    return -(hl.nn.log_softmax(hl.matmul(h, p.w3) + p.b3, -1) * y):sum() / x.shape[1]   -- (a size under dynamic_axes)
  end
  local function sgd(p, x, y)
    local l, g = hl.value_and_grad(mlp_loss)(p, x, y)
    local q = {}
    for k, v in pairs(p) do q[k] = v - 0.01 * g[k] end
    return l, q
  end
  return params, batch, labels, mlp_loss, sgd
end

return M
