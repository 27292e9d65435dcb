-- Soak: long runs whose resident memory stays flat (scripts/soak.lua; figures in
-- docs/reliability.md). Each runs in a process of its own, so that its RSS is its alone.
local root = debug.getinfo(1, "S").source:match("^@(.*/)tests/lua/") or "./"

local function soak(env, kind, count)
  local p = assert(io.popen(string.format("cd '%s' && %s luajit scripts/soak.lua %s %d 2>&1", root, env, kind, count)))
  local out = p:read("*a")
  p:close()
  local warm, last, peak, growth = out:match("RSS ([%d.]+) MB after warm%-up, ([%d.]+) MB at the end, peak ([%d.]+) MB, growth ([%d.]+) MB")
  assert(warm, "the soak run failed:\n" .. out:sub(-3000))
  return tonumber(growth), out
end

describe("soak", function()
  it("a 20,000-step jitted training loop keeps its RSS flat (within 8 MB after warm-up)", function()
    local growth, out = soak("", "train", 20000)
    assert.is_true(growth < 8, out:sub(-1500))
    local first, last = out:match("loss ([%d.]+) at the first step, ([%d.]+) at the last")
    assert.is_true(tonumber(last) < tonumber(first) / 4, out:sub(-500))   -- it did train
  end)

  it("1,000 distinct pipelines under HALUA_CACHE_MEM_MB=16 keep the RSS flat (within 12 MB after warm-up)", function()
    -- JIT-compiled (the disk cache off): about 0.75 MB a kernel, 750 MB unbounded; the bound holds
    -- about 21, so nearly every compile evicts one. The bound on growth is 12 KB a kernel, as for
    -- scripts/soak.lua's default run (2,000 under 32 MB, docs/reliability.md) in half the time. On
    -- the host also under scripts/test-gpu: the cache's bound is the same code there, and as many
    -- CUDA compiles (PTX besides the host code) outlast a GPU run's time
    local growth, out = soak("HALUA_DEVICE=cpu HALUA_CACHE_DIR=off HALUA_CACHE_MEM_MB=16", "pipelines", 1000)
    assert.is_true(growth < 12, out:sub(-1500))
    local entries, mb, evictions = out:match("cache: (%d+) entries, ([%d.]+) MB of 16 MB, (%d+) evictions")
    assert(entries, out:sub(-1500))
    assert.is_true(tonumber(mb) <= 16, out:sub(-500))
    assert.is_true(tonumber(evictions) > 900, out:sub(-500))
  end)
end)
