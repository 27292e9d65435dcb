-- One rank of scripts/bench's hl.dist rows (scripts/bench_dist.lua starts it under mpirun, one
-- thread per rank): the MLP train step (784-1024-1024-10, SGD) on a global batch of 512 split
-- over the ranks, its gradient averaged by one bucketed allreduce inside the jitted step; and the
-- allreduce's bandwidth against a memory copy of the same bytes. Rank 1 prints "row value" lines.
local common = require "bench_common"
local hl = require "halua"
local ffi = require "ffi"
local dist = hl.dist
local rank, size = dist.init()
local now = common.now
local global = 512
local per = global / size

math.randomseed(1)
local u = common.uniform
local params = dist.sync({w1 = u({784, 1024}, 0.1), b1 = hl.zeros(1024), w2 = u({1024, 1024}, 0.06), b2 = hl.zeros(1024),
                          w3 = u({1024, 10}, 0.1), b3 = hl.zeros(10)})
local x = dist.shard(u({global, 784}, 2))
local c = dist.shard(hl.array((function() local t = {} for i = 1, global do t[i] = i % 10 + 1 end return t end)(), "int32"))
local function loss(p, xb, cb)
  local h = hl.maximum(hl.matmul(xb, p.w1) + p.b1, 0)
  h = hl.maximum(hl.matmul(h, p.w2) + p.b2, 0)
  return hl.nn.cross_entropy(hl.matmul(h, p.w3) + p.b3, cb)
end
local step = hl.jit(function(p, xb, cb)
  local l, g = dist.value_and_grad(loss)(p, xb, cb)
  local q = {}
  for k, v in pairs(p) do q[k] = v - 0.01 * g[k] end
  return q, l
end)
local p = params
p = step(p, x, c)   -- compile
dist.barrier()
local best = math.huge
for _ = 1, 6 do   -- the best of 6 rounds: this shared machine's timings drift
  dist.barrier()
  local t0 = now()
  for _ = 1, 4 do
    local l
    p, l = step(p, x, c)
    l:item()
  end
  -- the slowest rank's time is the job's
  local t = dist.pmax(hl.array((now() - t0) / 4, "float64")):item()
  best = math.min(best, t)
end
if rank == 1 then
  print(string.format("dp_step_ms %.3f", best * 1e3))
  print(string.format("dp_images_s %.1f", global / best))
  print(string.format("dp_per_rank %d", per))
end

-- allreduce of 4M float32 (16 MB): algorithmic bandwidth, bytes / time; and memcpy of as many bytes
local n = 4 * 1024 * 1024
local v = hl.ones(n)
dist.psum(v)
local t_ar = math.huge
for _ = 1, 5 do
  dist.barrier()
  local t0 = now()
  dist.psum(v)
  t_ar = math.min(t_ar, dist.pmax(hl.array(now() - t0, "float64")):item())
end
local bytes = n * 4
local src, dst = ffi.new("char[?]", bytes), ffi.new("char[?]", bytes)
ffi.copy(dst, src, bytes)
local t_cp = math.huge
for _ = 1, 5 do
  local t0 = now()
  ffi.copy(dst, src, bytes)
  t_cp = math.min(t_cp, now() - t0)
end
if rank == 1 then
  print(string.format("allreduce_GBs %.3f", bytes / t_ar / 1e9))
  print(string.format("memcpy_GBs %.3f", 2 * bytes / t_cp / 1e9))
end
