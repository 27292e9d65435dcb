-- Long runs whose resident memory must stay flat (docs/reliability.md; tests/lua/soak_spec.lua runs
-- both with the counts below):
--
--   luajit scripts/soak.lua train [STEPS]       a jitted Adam training step of an MLP on the digits
--                                               data, STEPS times (default 20,000), with a batch
--                                               slice, a loss read back and a checkpoint every 2,000
--   luajit scripts/soak.lua pipelines [COUNT]   COUNT distinct jitted functions (default 2,000),
--                                               each compiled, called and dropped, under the
--                                               compiled-kernel cache's bound (HALUA_CACHE_MEM_MB)
--
-- Prints "rss N MB" samples (N: the step or pipeline) at 20 points, then one line
-- "soak KIND: N done, RSS A MB after warm-up, B MB at the end, peak C MB, growth D MB". The growth
-- is the least of the last five samples less the warm-up's: a leak raises every sample, while
-- a sample that falls before a collection holds that collection's garbage too (several MB when a
-- loaded machine makes collections slow, and the engine then spaces them: hl_lua_value.c).
local hl = require "halua"

local kind, count = arg[1], tonumber(arg[2])
if kind ~= "train" and kind ~= "pipelines" then
  io.stderr:write("usage: luajit scripts/soak.lua train [STEPS] | pipelines [COUNT]\n")
  os.exit(2)
end
count = count or (kind == "train" and 20000 or 2000)

local function rss_mb()
  local f = assert(io.open("/proc/self/statm"))
  f:read("*n")
  local pages = f:read("*n")
  f:close()
  return pages * 4096 / 2 ^ 20
end

-- samples: the first after a tenth of the run (warm-up: compiles, the allocator's first blocks)
local warm, peak
local recent = {}   -- the last five samples
local function sample(i)
  if i % math.max(1, math.floor(count / 20)) ~= 0 and i ~= count then return end
  local r = rss_mb()
  print(string.format("rss %d %.1f MB", i, r))
  io.stdout:flush()
  if not warm and i >= count / 10 then warm = r end
  if warm then peak = math.max(peak or r, r) end
  recent[#recent + 1] = r
  if #recent > 5 then table.remove(recent, 1) end
end

if kind == "train" then
  local here = debug.getinfo(1, "S").source:match("^@(.*/)") or "./"
  package.path = here .. "../samples/?.lua;" .. package.path
  local digits = require "digits"
  local x, labels = digits.load()   -- the training part of the real digits set
  local c = digits.classes(labels)   -- 1-based classes
  local n, batch = x.shape[1], 32
  local keys = hl.random.split(hl.random.key(0), 2)
  local params = {w1 = hl.nn.init.glorot(keys[1], {64, 128}), b1 = hl.zeros(128),
                  w2 = hl.nn.init.glorot(keys[2], {128, 10}), b2 = hl.zeros(10)}
  local function loss(p, xb, cb)
    local h = hl.nn.relu(hl.matmul(xb, p.w1) + p.b1)
    return hl.nn.cross_entropy(hl.matmul(h, p.w2) + p.b2, cb)
  end
  local opt = hl.optim.adam(1e-3)
  local step = hl.jit(function(p, s, xb, cb)
    local l, g = hl.value_and_grad(loss)(p, xb, cb)
    local np, ns = opt.update(g, s, p)
    return np, ns, l
  end, {name = "soak_train_step"})
  local state = opt.init(params)
  local checkpoint = os.tmpname()
  local first, l
  for i = 1, count do
    local lo = ((i - 1) * batch) % (n - batch) + 1
    params, state, l = step(params, state, x[{{lo, lo + batch - 1}}], c[{{lo, lo + batch - 1}}])
    local v = l:item()
    if v ~= v then error("soak: the loss became NaN at step " .. i) end
    first = first or v
    if i % 2000 == 0 then hl.savez(checkpoint, params) end
    sample(i)
  end
  local back = hl.loadz(checkpoint)
  os.remove(checkpoint)
  assert(back.w1.shape[1] == 64, "soak: the checkpoint did not load")
  print(string.format("loss %.4f at the first step, %.4f at the last", first, l:item()))
else
  local x = hl.array({1, 2, 3})
  for i = 1, count do
    -- a pipeline of its own: the constant is part of the IR
    local f = hl.jit(function(a) return hl.tanh(a * (1 + i * 1e-4)) + i end)
    local y = f(x):totable()
    local want = math.tanh(3 * (1 + i * 1e-4)) + i
    if math.abs(y[3] - want) > 1e-3 * math.abs(want) then error("soak: pipeline " .. i .. " gave " .. y[3]) end
    sample(i)
  end
  local info = hl.cache_info()
  print(string.format("cache: %d entries, %.1f MB of %.0f MB, %d evictions", info.entries, info.mem_bytes / 2 ^ 20,
                      info.mem_limit / 2 ^ 20, info.evictions))
end
print(string.format("soak %s: %d done, RSS %.1f MB after warm-up, %.1f MB at the end, peak %.1f MB, growth %.1f MB",
                    kind, count, warm, recent[#recent], peak, math.max(0, math.min(unpack(recent)) - warm)))
