-- scripts/bench's hl.dist table: the MLP train step (784-1024-1024-10, global batch 512) on 1 and
-- 2 ranks, one engine thread each, and the allreduce's bandwidth against a memory copy's. Each
-- figure comes from an mpirun job of scripts/bench_dist_job.lua; with --write the table goes to
-- docs/benchmarks.md between its markers.
local M = {}

local function job(root, np, env)
  local cmd = string.format("cd '%s' && env %s HALUA_NUM_THREADS=1 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 " ..
                            "LUA_PATH='%s/scripts/?.lua;'\"$LUA_PATH\" mpirun -np %d --bind-to core scripts/halua " ..
                            "scripts/bench_dist_job.lua 2>&1", root, env or "", root, np)
  local p = assert(io.popen(cmd))
  local out = p:read("*a")
  p:close()
  local r = {}
  for k, v in out:gmatch("([%w_]+) ([%d.]+)\n") do r[k] = tonumber(v) end
  if not r.dp_step_ms then io.stderr:write("bench: the hl.dist job on " .. np .. " ranks failed:\n" .. out) end
  return r
end

function M.run(root, write)
  local ok = os.execute("command -v mpirun >/dev/null 2>&1")
  if ok ~= 0 and ok ~= true then
    io.stderr:write("bench: mpirun not found (openmpi-bin): no hl.dist table\n")
    return
  end
  io.stderr:write("bench: hl.dist jobs on 1 and 2 ranks...\n")
  local one, two = job(root, 1), job(root, 2)

  local function f(v, fmt) return v and string.format(fmt or "%.2f", v) or "n/a" end
  local speedup = one.dp_images_s and two.dp_images_s and two.dp_images_s / one.dp_images_s
  local lines = {
    "| hl.dist, one engine thread per rank | 1 rank | 2 ranks | 2 ranks vs 1 |",
    "|---|---|---|---|",
    string.format("| MLP 784-1024-1024-10 train step, global batch 512: images/s | %s | %s | %s |", f(one.dp_images_s, "%.0f"),
                  f(two.dp_images_s, "%.0f"), speedup and string.format("%.2fx", speedup) or "n/a"),
    string.format("| its step time, the slowest rank (ms) | %s | %s | |", f(one.dp_step_ms), f(two.dp_step_ms)),
    string.format("| allreduce (psum) of 16 MB float32, eager: GB/s (bytes / time) | %s | %s | |", f(one.allreduce_GBs),
                  f(two.allreduce_GBs)),
    string.format("| memory copy of 16 MB on a rank: GB/s (read + write) | %s | %s | |", f(one.memcpy_GBs), f(two.memcpy_GBs)),
  }
  local ratio = two.allreduce_GBs and two.memcpy_GBs and two.allreduce_GBs / two.memcpy_GBs
  local text = table.concat(lines, "\n") .. "\n\nThe step: each rank's shard of the global batch, its gradient, its " ..
               "averaging over the ranks (w1 and w2 each reduced in place, the four small leaves in one bucket: 7.5 MB in " ..
               "all, through Open MPI's MPI_Allreduce) and the SGD update, in one jitted pipeline. At 2 ranks the eager " ..
               "allreduce moves " .. (ratio and string.format("%.0f%%", 100 * ratio) or "n/a") ..
               " of the bytes per second a memory copy does (Open MPI's shared-memory transport copies each fragment twice; " ..
               "an allreduce over an MPI-3 shared window, tried, was no faster in the step)."
  print("\n" .. text)
  if write then
    require("bench_common").write_block(root .. "/docs/benchmarks.md", "<!-- dist table: written by scripts/bench -->",
      "<!-- end of dist table -->", "Written by `scripts/bench --write` (or `--dist --write`) on " .. os.date("!%Y-%m-%d") ..
      ".\n\n" .. text, "Many processes (hl.dist over Open MPI)")
    print("wrote docs/benchmarks.md (hl.dist table)")
  end
  return {one = one, two = two}
end

return M
