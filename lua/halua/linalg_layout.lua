-- The packed results of hl.linalg's decomposition primitives (linalg.qr, linalg.svd, linalg.eigh,
-- linalg.slogdet): a primitive has one output, so each matrix [..., m, n] gives one vector
-- [..., total] holding its factors one after the other, each row-major, as
-- engine/core/hl_linalg_layout.h describes (this file follows it). linalg.lua unpacks the
-- factors; rules.lua's derivative rules unpack cotangents and pack tangents the same way.
local M = {}

-- the factors' {rows, cols, vector} (three, false when absent) of `op` in `mode` for m x n
-- matrices; `vector`: a factor that is a vector (s, w), one row in the layout
function M.parts(op, mode, m, n)
  local k = math.min(m, n)
  if op == "linalg.qr" then
    if mode == 1 then return {{m, m}, {m, n}, false} end
    if mode == 2 then return {false, {k, n}, false} end
    return {{m, k}, {k, n}, false}
  elseif op == "linalg.svd" then
    if mode == 1 then return {{m, m}, {1, k, true}, {n, n}} end
    if mode == 2 then return {false, {1, k, true}, false} end
    return {{m, k}, {1, k, true}, {k, n}}
  elseif op == "linalg.eigh" then
    return {{1, n, true}, mode < 2 and {n, n} or false, false}
  elseif op == "linalg.slogdet" then
    return {{1, mode == 1 and 1 or 2, true}, false, false}
  end
  error("halua: internal: " .. tostring(op) .. " is not a decomposition", 0)
end

-- z [..., total] -> its three factors, each [..., rows, cols] (nil when absent); a vector factor
-- (rows 1) comes as [..., cols]
function M.unpack(core, op, mode, z, m, n)
  local parts, out = M.parts(op, mode, m, n), {}
  local nb = z.ndim - 1
  local off = 0
  for p = 1, 3 do
    local rows, cols = parts[p] and parts[p][1] or 0, parts[p] and parts[p][2] or 0
    if parts[p] then
      local starts, steps, counts, shape = {}, {}, {}, {}
      for d = 1, nb do
        starts[d], steps[d], counts[d], shape[d] = 0, 1, z.shape[d], z.shape[d]
      end
      starts[nb + 1], steps[nb + 1], counts[nb + 1] = off, 1, rows * cols
      if parts[p][3] then
        shape[nb + 1] = cols
      else
        shape[nb + 1], shape[nb + 2] = rows, cols
      end
      out[p] = core.reshape(core.slice(z, starts, steps, counts), shape)
    end
    off = off + rows * cols
  end
  return out[1], out[2], out[3]
end

-- the inverse of unpack: factors ([..., rows, cols], or [..., cols] for a vector factor; nil for
-- an absent one) into [..., total], the batch shape given
function M.pack(hl, op, mode, m, n, batch, f1, f2, f3)
  local parts, given, list = M.parts(op, mode, m, n), {f1, f2, f3}, {}
  for p = 1, 3 do
    if parts[p] then
      local shape = {}
      for d = 1, #batch do shape[d] = batch[d] end
      shape[#batch + 1] = parts[p][1] * parts[p][2]
      list[#list + 1] = hl.reshape(given[p], shape)
    end
  end
  if #list == 1 then return list[1] end
  return hl.concatenate(list, #batch + 1)
end

return M
