-- The tracing state the transformations share, and the hooks through which a lower module calls
-- a higher one: jit (jit.lua), autodiff (ad.lua), vmap (vmap.lua) and compiled control flow
-- (control.lua) all read and write it here, instead of through each other.
--   stack              the jit traces being built, innermost last (jit, vmap's example traces,
--                      loop bodies): new ops record into the top one
--   tape               the open autodiff tape outside jit (eager ops run and are recorded), or nil
--   differentiating, forward_mode, batching
--                      how many reverse-mode, forward-mode and vmap transformations enclose the
--                      code being traced now (control flow compiles differently under them)
--   vmap_traces        vmap's example traces, and whether compiled loops inside them may be batched
--   hooks              set by higher modules: close_loop_bodies(trace), control.lua's, which vmap
--                      calls when it closes an example trace
local M = {
  stack = {},
  tape = nil,
  differentiating = 0,
  forward_mode = 0,
  batching = 0,
  vmap_traces = setmetatable({}, {__mode = "k"}),
  hooks = {},
}

-- the innermost trace being built, or nil
function M.top() return M.stack[#M.stack] end

return M
