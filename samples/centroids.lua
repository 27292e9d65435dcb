-- A nearest-centroid classifier on the real 8x8 digits set, written with eager ops and one
-- jitted function that compiles to one pipeline.
local hl = require "halua"
local here = debug.getinfo(1, "S").source:match("^@(.*/)") or "./"
package.path = here .. "?.lua;" .. package.path
local digits = require "digits"

local t0 = os.clock()
local xtr, ytr, xte, yte = digits.load()
print(string.format("loaded %d training and %d test images of %d pixels", xtr.shape[1], xte.shape[1], xtr.shape[2]))

-- one-hot labels (n x 10) from a Lua table, then class centroids with one matmul
local function one_hot(labels)
  local rows = {}
  for i, l in ipairs(labels) do
    local r = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0}
    r[l + 1] = 1
    rows[i] = r
  end
  return hl.array(rows)
end
local Y = one_hot(ytr)
local counts = hl.sum(Y, 1)                                   -- images per class
local centroids = hl.matmul(Y.T, xtr) / hl.reshape(counts, {10, 1})
print("class sizes:", counts)

-- squared distances to every centroid, and the nearest one: traced once, compiled to one pipeline
local classify = hl.jit(function(x, c)
  local d = hl.sum(x * x, 2, true) - 2 * hl.matmul(x, c.T) + hl.sum(c * c, 2)
  return hl.argmax(-d, 2), hl.nn.softmax(-d * 4, 2)
end)

local pred, prob = classify(xte, centroids)
local p = pred:totable()
local right = 0
for i, l in ipairs(yte) do
  if p[i] - 1 == l then right = right + 1 end
end
print(string.format("nearest-centroid test accuracy: %.1f%% (%d of %d)", 100 * right / #yte, right, #yte))
print("class probabilities of the first test image:")
print(prob[1])
print("the traced program:")
print(hl.trace(function(x, c) return hl.argmax(-(hl.sum(x * x, 2, true) - 2 * hl.matmul(x, c.T)), 2) end, xte, centroids))
local ci = hl.cache_info()
print(string.format("%d pipelines compiled in %.0f ms, %d cache hits; %.2f s in all", ci.misses, ci.compile_ms, ci.hits, os.clock() - t0))
if right / #yte < 0.80 then error("halua: centroids: accuracy below 80%: something is wrong", 0) end
