-- Engine memory is invisible to Lua's GC (16 bytes a userdata); halua steps the GC by the bytes it
-- holds, so a loop making temporaries runs in bounded memory without collectgarbage().
local hl = require "halua"

local function rss_mb()
  local f = io.open("/proc/self/statm")
  if not f then return nil end
  local pages = f:read("*n")
  f:read("*n")
  local rss = f:read("*n")
  f:close()
  return rss * 4096 / 2 ^ 20, pages
end

-- runs Lua source in a new luajit process, after the environment settings in `env`; its output
local function run_script(src, env)
  local script = os.tmpname()
  local f = assert(io.open(script, "w"))
  f:write(src)
  f:close()
  local p = io.popen((env or "") .. " luajit " .. script .. " 2>&1")
  local out = p:read("*a")
  p:close()
  os.remove(script)
  return out
end

-- what the scripts below start with: halua on the CPU (host blocks: device results are paced by
-- their own rule, cuda_spec) and statm(), the process's RSS in MiB
local SCRIPT_HEAD = [[
  local hl = require "halua"
  hl.default_device("cpu")
  local statm = function()
    local h = io.open("/proc/self/statm") h:read("*n") local rss = h:read("*n") h:close()
    return rss * 4096 / 2 ^ 20
  end
]]

-- runs a script that ends by printing whether its values were right and how much its RSS grew
local function values_and_growth(src)
  local out = run_script(SCRIPT_HEAD .. src)
  local ok, grew = out:match("(%a+) (%-?[%d.]+)%s*$")
  assert(ok, "the script failed: " .. out)
  return ok == "true", tonumber(grew)
end

describe("memory", function()
  it("stays bounded over 10,000 iterations of 1 MB temporaries", function()
    local x = hl.ones({256 * 1024}) + 0
    local start = rss_mb()
    local peak_heap = 0
    -- engine garbage may reach 4x the live Lua heap between collections (heap_check in hl_lua.c),
    -- and this process also holds the Lua data of every spec run before this one
    collectgarbage()
    local bound = 400 + 4 * collectgarbage("count") / 1024
    for i = 1, 10000 do
      local t = x * i + 1   -- two 1 MB temporaries per iteration
      if i % 500 == 0 then peak_heap = math.max(peak_heap, hl.core.heap_bytes()) end
      assert(t)
    end
    assert.is_true(peak_heap < bound * 2 ^ 20, "engine heap reached " .. peak_heap / 2 ^ 20 .. " MB, over " .. bound .. " MB")
    local now = rss_mb()
    if start and now then assert.is_true(now - start < 600, "RSS grew by " .. (now - start) .. " MB") end
  end)
  -- new memory costs more to touch than a matmul takes on virtualised machines, so results are
  -- collected every 32 MiB (more where the Lua heap is large: the test runs in its own process,
  -- whose Lua heap is halua's alone) and their blocks reused: the loop's memory stops growing
  it("collects results every 32 MiB and reuses their blocks", function()
    local out = run_script(SCRIPT_HEAD .. [[
      local m = hl.ones({1024, 1024}) + 0
      local f = hl.jit(function(a) return a * 2 end)   -- 4 MiB results
      collectgarbage()
      local base = hl.core.heap_bytes()
      f(m)
      local peak, rss0 = 0, nil
      for i = 1, 200 do
        local r = f(m)
        peak = math.max(peak, hl.core.heap_bytes() - base)
        if i == 40 then rss0 = statm() end
      end
      print(string.format("%d %.1f", peak, statm() - rss0))
    ]])
    local peak, grew = out:match("(%d+) (%-?[%d.]+)%s*$")
    assert(peak, "the loop failed: " .. out)
    peak, grew = tonumber(peak), tonumber(grew)
    assert.is_true(peak <= 32 * 2 ^ 20 + 2 * 4 * 2 ^ 20, "results piled up to " .. peak / 2 ^ 20 .. " MB")
    -- after the first collections every result lands in a reused block
    assert.is_true(grew < 16, "RSS grew by " .. grew .. " MB")
  end)
  -- a freed large block serves smaller arrays, in whole 2 MiB pages: when the sizes a program
  -- makes change, it writes into memory it has touched before instead of new pages
  it("reuses a freed large array's memory for smaller arrays", function()
    local ok, grew = values_and_growth([[
      local base = hl.zeros({2 ^ 20}) + 0
      local big = hl.zeros({16 * 2 ^ 20}) + 1   -- 64 MiB, every page written
      big = nil
      collectgarbage()
      collectgarbage()
      local rss0 = statm()
      local keep = {}
      for i = 1, 8 do keep[i] = base + i end   -- eight results of 4 MiB, alive together
      local grew = statm() - rss0
      local ok = true
      for i = 1, 8 do ok = ok and hl.min(keep[i]):item() == i and hl.max(keep[i]):item() == i end
      print(string.format("%s %.1f", tostring(ok), grew))
    ]])
    -- each result whole and its own (the pieces of one block do not overlap)
    assert.is_true(ok)
    -- 32 MiB of new results, in pages the 64 MiB array had touched
    assert.is_true(grew < 8, "RSS grew by " .. grew .. " MB")
  end)
  -- an array of whole 2 MiB pages (2, 4, 64 MiB...) keeps its pad past the last element in a
  -- 4 KiB page, where a huge page would take 2 MiB more memory for it
  it("keeps arrays of 2 MiB in about 2 MiB of memory each", function()
    local ok, grew = values_and_growth([[
      local base = hl.zeros({512, 1024}) + 0   -- 2 MiB of float32
      collectgarbage()
      local rss0 = statm()
      local keep = {}
      for i = 1, 40 do keep[i] = base + i end
      local grew = statm() - rss0
      local ok = hl.sum(keep[40]):item() == 40 * 512 * 1024 and hl.sum(keep[1]):item() == 512 * 1024
      print(string.format("%s %.1f", tostring(ok), grew))
    ]])
    assert.is_true(ok)
    -- 80 MiB of arrays: 160 MiB when each pad took a huge page of its own
    assert.is_true(grew < 100, "40 arrays of 2 MiB grew RSS by " .. grew .. " MB")
  end)
  -- freed blocks wait in the engine's cache; an allocation the system refuses empties the cache
  -- and tries again, so the memory of arrays already gone is never what a new one lacks
  it("gives its cached blocks back when the system has no memory for a new array", function()
    local out = run_script(SCRIPT_HEAD .. [[
      local ffi = require "ffi"
      ffi.cdef [=[
        struct hl_test_rlimit { unsigned long cur, max; };
        int getrlimit(int resource, struct hl_test_rlimit *r);
        int setrlimit(int resource, const struct hl_test_rlimit *r);
      ]=]
      local RLIMIT_AS = 9   -- (Linux)
      local vsz = function()
        local h = io.open("/proc/self/statm") local pages = h:read("*n") h:close()
        return pages * 4096
      end
      local one = hl.ones({1}) + 0
      local a = one:broadcast_to({100 * 2 ^ 20}) + 1   -- 400 MiB, then freed into the cache
      assert(hl.sum(a):item() == 200 * 2 ^ 20)
      a = nil
      collectgarbage()
      collectgarbage()
      -- address space for 300 MiB more: a 500 MiB array fits only once the 400 are given back
      local r = ffi.new("struct hl_test_rlimit")
      assert(ffi.C.getrlimit(RLIMIT_AS, r) == 0)
      r.cur = vsz() + 300 * 2 ^ 20
      assert(ffi.C.setrlimit(RLIMIT_AS, r) == 0)
      local ok, b = pcall(function() return one:broadcast_to({125 * 2 ^ 20}) + 2 end)
      print(tostring(ok), ok and hl.sum(b):item() or b)
    ]])
    local ok, value = out:match("(%a+)\t([^\n]*)%s*$")
    assert(ok, "the script failed: " .. out)
    assert.are.equal("true", ok, value)
    assert.are.equal(3 * 125 * 2 ^ 20, tonumber(value))
  end)
  -- small results are collected after every 2 MiB of them, so a loop reuses blocks still in the
  -- caches; a collection that takes long (a large Lua heap) makes that rule wait, never more than
  -- a third of the time going to collections
  local function small_results_peak(lua_heap_entries)
    local out = run_script(string.format([[
      local hl = require "halua"
      hl.default_device("cpu")
      local keep = {}
      for i = 1, %d do keep[i] = {i} end
      local x = hl.ones({1000}, "float32") + 0
      collectgarbage()
      local base = hl.core.heap_bytes()
      local peak = 0
      for i = 1, 8000 do   -- 8000 results of 4 KB: 32 MB, the large-array rule's 32 MiB
        local r = x * 2
        peak = math.max(peak, hl.core.heap_bytes() - base)
      end
      print(string.format("%%d %%d", peak, #keep))
    ]], lua_heap_entries))
    local peak = out:match("(%d+) %d+%s*$")
    assert(peak, "the loop failed: " .. out)
    return tonumber(peak)
  end
  it("collects small results every 2 MiB of them", function()
    -- (more than 2 MiB where an op takes less than twice what a collection takes: a few MiB)
    local peak = small_results_peak(0)
    assert.is_true(peak <= 8 * 2 ^ 20, "small results piled up to " .. peak / 2 ^ 20 .. " MB")
  end)
  it("collects small results less often where a collection is slow (a large Lua heap)", function()
    -- 10^6 tables make a collection take tens of milliseconds, longer than the whole loop
    local peak = small_results_peak(1000000)
    assert.is_true(peak >= 16 * 2 ^ 20, "small results were collected every " .. peak / 2 ^ 20 .. " MB")
  end)

  it("leaves results of a few elements to Lua's own cycles, which free them first", function()
    -- each result is a 200-byte userdata and 32 bytes of array: Lua's incremental collector
    -- finishes a cycle every few thousand ops, long before 2 MiB of arrays, and each cycle
    -- moves the early rule's mark, so the loop asks for no full collection of its own
    local out = run_script([[
      local hl = require "halua"
      hl.default_device("cpu")
      local a, b = hl.ones({8}) + 0, hl.ones({8}) + 0
      local x = hl.ones({1000}) + 0
      collectgarbage()
      local base, peak = hl.core.heap_bytes(), 0
      local c0 = hl.core.collections()
      for i = 1, 200000 do
        local r = a + b
        if i % 1000 == 0 then peak = math.max(peak, hl.core.heap_bytes() - base) end
      end
      local small = hl.core.collections() - c0
      c0 = hl.core.collections()
      for i = 1, 8000 do local r = x * 2 end   -- 32 MB of 4 KB results: the early rule's
      print(string.format("%d %d %d", small, peak, hl.core.collections() - c0))
    ]])
    local small, peak, larger = out:match("(%d+) (%d+) (%d+)%s*$")
    assert(small, "the loop failed: " .. out)
    assert.are.equal(0, tonumber(small))
    assert.is_true(tonumber(peak) <= 2 * 2 ^ 20, "small results piled up to " .. peak / 2 ^ 20 .. " MB")
    -- results of 4 KB outpace Lua's cycles: the early rule still collects every few MiB
    assert.is_true(tonumber(larger) >= 4, "only " .. larger .. " collections over 32 MB of small results")
  end)

  it("frees what is no longer referenced", function()
    collectgarbage()
    collectgarbage()
    local before = hl.core.heap_bytes()
    do
      local big = hl.zeros({4096, 1024}) + 1   -- 16 MB
      assert.is_true(hl.core.heap_bytes() >= before + 16 * 2 ^ 20)
      assert(big)
    end
    collectgarbage()
    collectgarbage()
    assert.is_true(hl.core.heap_bytes() < before + 2 ^ 20)
  end)
end)

-- the bounds the brief asks for: under ~200 MB of RSS growth at any point, sampled during the loop,
-- and a Lua heap that does not grow with the iterations, with no collectgarbage() call
describe("memory, sampled during the loop", function()
  local function run(iterations, body)
    local x = hl.ones({256 * 1024}) + 0   -- 1 MB
    local rss0, lua0 = rss_mb(), collectgarbage("count")
    local peak_rss, peak_lua = 0, 0
    for i = 1, iterations do
      body(x, i)
      if i % 100 == 0 then
        local r = rss_mb()
        if r then peak_rss = math.max(peak_rss, r - rss0) end
        peak_lua = math.max(peak_lua, collectgarbage("count") - lua0)
      end
    end
    assert.is_true(peak_rss < 200, string.format("RSS grew by %.0f MB", peak_rss))
    assert.is_true(peak_lua < 16 * 1024, string.format("the Lua heap grew by %.0f KB", peak_lua))
  end
  it("10,000 iterations of elementwise temporaries", function()
    run(10000, function(x, i) local t = hl.exp(x * (i / 10000)) - x; assert(t) end)
  end)
  it("2,000 iterations of views, reductions and concatenations", function()
    run(2000, function(x, i)
      local m = hl.reshape(x, {512, 512})
      local t = hl.sum(m.T[{{1, 512, 2}}] + i, 1) + hl.concatenate({m[{{1, 256}}], m[{{257, 512}}]}, 1)[i % 512 + 1]
      assert(t)
    end)
  end)
  it("3,000 calls of a jitted function making 1 MB results", function()
    local f = hl.jit(function(a, s) return hl.tanh(a * s) + a, hl.max(a) end)
    local s = hl.array(0.5)
    run(3000, function(x) local r, m = f(x, s); assert(r and m) end)
  end)
  it("2,000 failing calls do not leak", function()
    local bad = hl.ones({3})
    run(2000, function(x) assert(not pcall(hl.add, x, bad)); assert(not pcall(hl.reshape, x, {7})) end)
  end)
end)

-- The compiled-kernel cache is bounded (HALUA_CACHE_MEM_MB, least recently used first) and frees
-- the code of what it evicts or clears once no jitted function holds it. Each case runs in its own
-- process, with the disk cache off: every kernel is then JIT-compiled, about 0.75 MB apiece.
describe("the compiled-kernel cache's memory", function()
  local function script_run(env, body)
    return run_script([[
      local hl = require "halua"
      local function rss()
        local h = io.open("/proc/self/statm") h:read("*n") local r = h:read("*n") h:close()
        return r * 4096 / 2 ^ 20
      end
      local x = hl.array({1, 2, 3})
      -- a distinct pipeline for each k (the constant is part of the IR)
      local function make(k) return hl.jit(function(a) return hl.tanh(a * k + 1) end) end
      local function close(y, k)
        for i, v in ipairs(y:totable()) do
          if math.abs(v - math.tanh(i * k + 1)) > 1e-6 then error("wrong value for k = " .. k) end
        end
      end
    ]] .. body, env .. " HALUA_CACHE_DIR=off")
  end

  it("reports its size and bound in hl.cache_info()", function()
    local info = hl.cache_info()
    assert.is_number(info.mem_bytes)
    assert.are.equal(512 * 2 ^ 20, info.mem_limit)
    assert.is_number(info.evictions)
    assert.truthy(tostring(info):find("mem_bytes = ", 1, true))
    local out = script_run("HALUA_CACHE_MEM_MB=3.5", "print('limit', hl.cache_info().mem_limit)")
    assert.truthy(out:find("limit\t" .. 3.5 * 2 ^ 20, 1, true), out)
  end)

  it("stays within HALUA_CACHE_MEM_MB, evicting the least recently used, and evicted functions still run", function()
    local out = script_run("HALUA_CACHE_MEM_MB=6", [[
      local kept = make(1)
      close(kept(x), 1)
      local first = make(2)
      close(first(x), 2)
      local rss0 = rss()
      local info0 = hl.cache_info()
      for k = 3, 62 do
        close(make(k)(x), k)
        close(make(1)(x), 1)   -- a new jit of a cached pipeline: a hit, which keeps it the newest
        local info = hl.cache_info()
        assert(info.mem_bytes <= 6 * 2 ^ 20, "over the bound: " .. info.mem_bytes)
      end
      collectgarbage()
      local info = hl.cache_info()
      close(first(x), 2)   -- evicted from the cache, still held by its function
      local m = info.misses
      close(make(1)(x), 1)
      local hit_kept = hl.cache_info().misses == m
      close(make(2)(x), 2)
      local missed_first = hl.cache_info().misses == m + 1
      print(string.format("evictions %d entries %d hit %s missed %s grew %.1f", info.evictions, info.entries,
                          tostring(hit_kept), tostring(missed_first), rss() - rss0))
    ]])
    local ev, entries, hit, missed, grew = out:match("evictions (%d+) entries (%d+) hit (%a+) missed (%a+) grew (%-?[%d.]+)")
    assert(ev, out)
    assert.is_true(tonumber(ev) >= 50, out)
    assert.is_true(tonumber(entries) < 12, out)
    assert.are.equal("true", hit, out)
    assert.are.equal("true", missed, out)
    -- 60 pipelines unbounded keep about 45 MB
    assert.is_true(tonumber(grew) < 20, out)
  end)

  it("frees the kernels' code on hl.cache_clear() once their functions are gone", function()
    local out = script_run("", [[
      for k = 1, 60 do close(make(k)(x), k) end
      collectgarbage() collectgarbage()
      local held = hl.cache_info().mem_bytes / 2 ^ 20
      local before = rss()
      hl.cache_clear()
      collectgarbage()
      print(string.format("held %.1f freed %.1f entries %d", held, before - rss(), hl.cache_info().entries))
    ]])
    local held, freed, entries = out:match("held ([%d.]+) freed (%-?[%d.]+) entries (%d+)")
    assert(held, out)
    assert.is_true(tonumber(held) > 20, out)
    assert.is_true(tonumber(freed) > 0.5 * tonumber(held), out)
    assert.are.equal("0", entries)
  end)

  it("warns of a HALUA_CACHE_MEM_MB that is not a positive number", function()
    for _, bad in ipairs({"0", "-3", "lots", "12MB"}) do
      local out = script_run("HALUA_CACHE_MEM_MB=" .. bad, "print('limit', hl.cache_info().mem_limit)")
      assert.truthy(out:find("halua: warning: HALUA_CACHE_MEM_MB=" .. bad .. " is not a positive number of megabytes; using 512", 1, true), out)
      assert.truthy(out:find("limit\t" .. 512 * 2 ^ 20, 1, true), out)
    end
  end)
end)
