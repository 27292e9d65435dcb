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

describe("memory", function()
  it("stays bounded over 10,000 iterations of 1 MB temporaries", function()
    local x = hl.ones({256 * 1024}) + 0
    local start = rss_mb()
    local peak_heap = 0
    for i = 1, 10000 do
      local t = x * i + 1   -- two 1 MB temporaries per iteration
      if i % 500 == 0 then peak_heap = math.max(peak_heap, hl.core.heap_bytes()) end
      assert(t)
    end
    assert.is_true(peak_heap < 400 * 2 ^ 20, "engine heap reached " .. peak_heap / 2 ^ 20 .. " MB")
    local now = rss_mb()
    if start and now then assert.is_true(now - start < 600, "RSS grew by " .. (now - start) .. " MB") end
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
