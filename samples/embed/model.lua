-- The model the C host samples load (predict.c, threads.c): one dense layer with a softmax,
-- jitted, so the host's calls run one compiled pipeline. The host wraps its buffers as arrays
-- and calls predict(x, w, b): x [batch, features], w [features, classes], b [classes].
local hl = require "halua"

predict = hl.jit(function(x, w, b)
  return hl.nn.softmax(hl.matmul(x, w) + b, -1)
end)

-- the class of each row (1-based), for a host that wants labels rather than probabilities
classify = hl.jit(function(x, w, b)
  return hl.argmax(hl.matmul(x, w) + b, -1)
end)

-- 20 steps of c = c/2 + x/4 in one compiled loop (hosts that run it from several threads at once
-- check that each run keeps its own loop results)
smooth = hl.jit(function(x)
  return hl.fori_loop(1, 20, function(_, c) return c * 0.5 + x * 0.25 end, x)
end)
