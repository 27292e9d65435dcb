-- hl.vmap: f over a batch, as if called on each example and the results stacked, in one pass.
--
-- How it works. f is traced once on one example's abstract arguments (the batch axis removed),
-- into a graph of primitives, as jit traces. The graph is then replayed on the real arguments
-- with the batch as a leading axis: each primitive by its batching rule (rules.lua, beside its
-- differentiation rule), which says how the primitive applies to a batch in one op. The replay
-- is ordinary halua ops, so it runs eagerly, traces into an enclosing jit (one pipeline, not a
-- loop) or records onto an autodiff tape; vmap of vmap and vmap of grad work the same way.
-- Inside jit, fori_loop and scan in f stay compiled loops: the replay batches a loop by
-- replaying its body on the batch into a new compiled loop (control.lua). Elsewhere, and for
-- while_loop, control flow inside f is traced step by step.
return function(hl, core)
  local tracing = require "halua.trace"
  local util = require "halua.util"
  local tree = require "halua.tree"
  local rules = hl.rules
  local is_array = core.is_array
  local unpack = unpack or table.unpack

  local fail = util.fail
  local pack = util.pack
  local shape_str = util.shape_str

  local is_callable = util.is_callable

  -- an axis spec: a non-zero integer (1-based, negative from the end) or false
  local function check_axis(what, a)
    if a == false then return false end
    if type(a) ~= "number" or a ~= math.floor(a) or a == 0 then
      fail("vmap: %s must be a non-zero integer axis (1-based) or false, got %s", what, tostring(a))
    end
    return a
  end

  -- the axes spec of argument (or result) i: a number or false for all, or a table of them
  local function axis_of(spec, i, what)
    if type(spec) == "table" then
      local a = spec[i]
      if a == nil then fail("vmap: %s has no entry for %s %d (give a number, or false for not mapped)", what, what == "in_axes" and "argument" or "result", i) end
      return check_axis(what .. "[" .. i .. "]", a)
    end
    return check_axis(what, spec)
  end

  -- x with axis a (1-based, normalised) moved to the front, or to position a from the front
  local function move_axis(x, from, to)
    if from == to then return x end
    local order = {}
    for d = 1, x.ndim do if d ~= from then order[#order + 1] = d end end
    table.insert(order, to, from)
    return hl.transpose(x, order)
  end

  local function device_of(x) return core.device_of(x) end

  -- The values of every node of a traced graph replayed on a batch of `size`: each primitive by
  -- its batching rule. bind(id) gives a parameter's value and whether it is batched; placed(v)
  -- moves a constant the graph makes to where the batch is.
  local function replay(trace, size, bind, placed)
    local nodes = core.graph_nodes(trace, 0, 2 ^ 30)
    local val, bat = {}, {}
    local id = 0
    while nodes[id] do
      local n = nodes[id]
      if n.op == "param" then
        val[id], bat[id] = bind(id)
        if val[id] == nil then fail("vmap: internal: parameter node %d has no value", id) end
      elseif n.op == "const" then
        val[id], bat[id] = placed(core.full({}, n.value, n.dtype)), false
      elseif n.op == "iota" then
        val[id], bat[id] = placed(core.iota(n.dtype, n.shape, n.axis - 1)), false
      else
        local x, b = {}, {}
        for k, i in ipairs(n.ins) do x[k], b[k] = val[i], bat[i] end
        local r = rules[n.op]
        if not (r and r.batch) then fail("vmap: no batching rule for %s", n.op) end
        val[id], bat[id] = r.batch(n, x, b, size)
      end
      id = id + 1
    end
    return val, bat
  end

  -- v with the batch as its first axis: repeated when it does not depend on the batch
  local function with_batch(v, batched, size)
    if batched then return v end
    local one, full = {1}, {size}
    for d, e in ipairs(v.shape) do one[d + 1], full[d + 1] = e, e end
    return hl.broadcast_to(hl.reshape(v, one), full)
  end

  -- vmap traces whose compiled loops can be batched (tracing.vmap_traces): the replay records
  -- into a jit trace (or a loop body, or such a vmap trace), where a batched loop compiles
  -- (control.lua)
  local function loops_compile(parent)
    if parent == nil or parent ~= tracing.stack[#tracing.stack] then return false end
    return tracing.vmap_traces[parent] ~= false
  end
  local function close(trace)
    if tracing.hooks.close_loop_bodies then tracing.hooks.close_loop_bodies(trace) end
    core.trace_close(trace)
  end

  function hl.vmap(f, in_axes, out_axes)
    if not is_callable(f) then fail("vmap: expected a function, got %s", type(f)) end
    if in_axes == nil then in_axes = 1 end
    if out_axes == nil then out_axes = 1 end
    if type(in_axes) ~= "table" then check_axis("in_axes", in_axes) end
    if type(out_axes) ~= "table" then check_axis("out_axes", out_axes) end
    if out_axes == false then fail("vmap: out_axes must map the results (false would drop the batch)") end

    return function(...)
      local args = pack(...)
      if type(in_axes) == "table" and #in_axes ~= args.n then
        fail("vmap: in_axes lists %d axes but the function got %d arguments", #in_axes, args.n)
      end
      -- the batch: every mapped leaf's axis moved to the front; its extent the batch size
      local size, size_from
      local flat = {}   -- per argument {leaves, def, mapped}
      for i = 1, args.n do
        local a = axis_of(in_axes, i, "in_axes")
        local leaves, def = tree.flatten(args[i])
        for j, l in ipairs(leaves) do
          if a then
            if not core.usable(l, "vmap") then
              fail("vmap: argument %d is mapped but holds a %s; map arrays, or give it in_axes false", i, type(l))
            end
            if l.ndim == 0 then fail("vmap: argument %d is mapped along axis %d but holds a 0-d array", i, a) end
            local ax = a < 0 and l.ndim + a + 1 or a
            if ax < 1 or ax > l.ndim then
              fail("vmap: in_axes %d is out of range for argument %d of shape %s", a, i, shape_str(l.shape))
            end
            local n = l.shape[ax]
            if size == nil then
              size, size_from = n, i
            elseif n ~= size then
              fail("vmap: argument %d has %d examples along axis %d, argument %d has %d", i, n, ax, size_from, size)
            end
            leaves[j] = move_axis(l, ax, 1)
          end
        end
        flat[i] = {leaves = leaves, def = def, mapped = a ~= false}
      end
      if size == nil then fail("vmap: no argument is mapped (in_axes are all false); nothing to batch over") end

      -- trace one example, nested in the trace being built or the open autodiff tape (if any),
      -- so that values closed over from it are captured as they are, and the replay records on it
      local parent = tracing.stack[#tracing.stack] or tracing.tape
      local trace = parent and core.trace_new(parent) or core.trace_new()
      -- (not where autodiff outside vmap will differentiate the replay: a batched loop has no
      -- derivative rule, so loops there are traced step by step)
      tracing.vmap_traces[trace] = loops_compile(parent) and (tracing.differentiating or 0) == 0 and
                                 (tracing.forward_mode or 0) == 0
      local targs, arg_node, actual = {}, {}, {}
      for i = 1, args.n do
        local fi = flat[i]
        local tl = {}
        for j, l in ipairs(fi.leaves) do
          if is_array(l) then
            local shape = l.shape
            if fi.mapped then table.remove(shape, 1) end
            tl[j] = core.trace_arg(trace, l.dtype, shape, device_of(l))
            local node = core.node_in(trace, tl[j])
            arg_node[node] = true
            actual[node] = {l, fi.mapped}
          else
            tl[j] = l
          end
        end
        targs[i] = tree.unflatten(fi.def, tl)
      end
      local stack = tracing.stack
      stack[#stack + 1] = trace
      tracing.batching = (tracing.batching or 0) + 1
      local ok, res = pcall(function() return pack(f(unpack(targs, 1, args.n))) end)
      tracing.batching = tracing.batching - 1
      stack[#stack] = nil
      if not ok then
        close(trace)
        error(res, 0)
      end

      -- replay the graph on the batch; constants the graph makes go where the batch is
      -- (a mapped argument traced by an enclosing jit gives its program's device: a constant
      -- made on the host there meets concrete constants made on the default device)
      local device
      for _, a in pairs(actual) do
        if a[2] then device = a[1].device end
      end
      local function placed(v)
        if device and not core.is_tracer(v) and device ~= v.device then return v:to(device) end
        return v
      end
      local ok2, out = pcall(function()
        local captures = core.trace_captures(trace)
        local val, bat = replay(trace, size, function(id)
          if actual[id] then return actual[id][1], actual[id][2] end
          return placed(captures[id]), false   -- (a constant the function captured: on the host, say)
        end, placed)
        -- the results, batched along out_axes; values that do not depend on the batch repeat
        local results = {}
        for r = 1, res.n do
          local oa = axis_of(out_axes, r, "out_axes")
          if oa == false then fail("vmap: out_axes[%d] is false: results must be mapped", r) end
          local leaves, def = tree.flatten(res[r])
          for j, l in ipairs(leaves) do
            local node = is_array(l) and core.node_in(trace, l)
            local v, batched
            if node then
              v, batched = val[node], bat[node]
            else
              v, batched = is_array(l) and l or hl.array(l), false
            end
            v = with_batch(v, batched, size)
            local to = oa < 0 and v.ndim + oa + 1 or oa
            if to < 1 or to > v.ndim then
              fail("vmap: out_axes %d is out of range for result %d of shape %s", oa, r, shape_str(v.shape))
            end
            leaves[j] = move_axis(v, 1, to)
          end
          results[r] = def == "*" and leaves[1] or tree.unflatten(def, leaves)
        end
        return results
      end)
      close(trace)
      if not ok2 then error(out, 0) end
      return unpack(out, 1, res.n)
    end
  end

  -- for compiled loops (control.lua, which init.lua hands this table): a body replayed on a
  -- batch, and a value given the batch as its first axis
  return {batch_replay = replay, with_batch = with_batch}
end
