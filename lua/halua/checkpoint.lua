-- hl.checkpoint(f) (also hl.remat, hl.lax.checkpoint): rematerialisation. Under a derivative the
-- wrapped function's intermediates are not kept for the backward pass: its forward run computes
-- only the outputs, and the backward pass runs f again (as hl.vjp(f, ...)) to get them. It is
-- built on autodiff's custom groups (ad.lua), as custom_vjp is: the outputs become fresh nodes
-- whose reverse rule is that second run, and whose forward rule is hl.jvp of f.
--   On autodiff's tape (hl.grad outside jit) the forward run takes the arguments' bare data, so
--   nothing it computes is recorded or held. Inside hl.jit it is traced on stop_gradient of the
--   arguments; the backward pass traces f once more, so the compiled pipeline computes the
--   intermediates where the backward pass needs them instead of storing them.
--   Values f closes over are not differentiated through it: pass what it depends on as arguments
--   (a closure over a value that may be differentiated is an error, on the tape and in jit).
return function(hl, core, ad)
  local util = require "halua.util"
  local tree = require "halua.tree"
  local tracing = require "halua.trace"
  local fail = util.fail
  local is_array = core.is_array
  local unpack = unpack or table.unpack
  local check_closures

  local function flat_args(args)
    local flat, defs = {}, {}
    for i = 1, args.n do
      local leaves, def = tree.flatten(args[i])
      defs[i] = def
      for _, l in ipairs(leaves) do flat[#flat + 1] = l end
    end
    return flat, defs
  end

  local CLOSURE = "checkpoint: the function uses a value being differentiated that it did not get as an argument " ..
                  "(a closure); pass that value as an argument of the checkpointed function"
  -- Inside a jit trace f ran on stop_gradient of its arguments, so its nodes come after theirs.
  -- A node of f that reads an earlier float node other than a parameter or constant reads a
  -- value f closed over, which may depend on a differentiated variable: its gradient would be
  -- lost without a word, so it is an error (stop_gradient of it inside f is allowed).
  local safe = {param = true, const = true, iota = true, stop_gradient = true}
  check_closures = function(trace, fwd_args, nargs, outs)
    local lo, hi, mine = math.huge, -1, {}
    for i = 1, nargs do
      for _, l in ipairs(tree.flatten(fwd_args[i])) do
        local id = is_array(l) and ad.node_in(trace, l)
        if id then mine[id], lo = true, math.min(lo, id) end
      end
    end
    local todo = {}
    for _, l in ipairs(outs) do
      local id = is_array(l) and ad.node_in(trace, l)
      if id then todo[#todo + 1], hi = id, math.max(hi, id) end
    end
    if hi < lo then return end
    local nodes = core.graph_nodes(trace, lo, hi)
    local seen = {}
    while #todo > 0 do
      local id = table.remove(todo)
      if not seen[id] and not mine[id] and id >= lo then
        seen[id] = true
        local n = nodes[id]
        if n.op ~= "stop_gradient" then
          for _, i in ipairs(n.ins) do
            if i >= lo then
              todo[#todo + 1] = i
            else
              local m = core.graph_nodes(trace, i, i)[i]
              if m.dtype:match("float") and not safe[m.op] then fail(CLOSURE) end
            end
          end
        end
      end
    end
  end

  function hl.checkpoint(f0, opts)
    if not util.is_callable(f0) then fail("checkpoint: expected a function, got %s", type(f0)) end
    util.options("checkpoint", opts, {}, "(no options)")
    -- f0's results as one list (a pytree), so that functions of several results (a scan body's
    -- carry and output) go through vjp and jvp as one value
    local nres
    local function f(...)
      local r = util.pack(f0(...))
      for i = 1, r.n do
        if r[i] == nil then fail("checkpoint: the function's result %d is nil; return arrays or tables of them", i) end
      end
      nres = r.n
      r.n = nil
      return r
    end
    return function(...)
      local args = util.pack(...)
      local flat, defs = flat_args(args)
      local trace
      for _, l in ipairs(flat) do
        if is_array(l) then
          trace = core.trace_of(l)
          if trace then break end
        end
      end
      -- nothing is being differentiated: f itself
      if not trace or (tracing.differentiating == 0 and tracing.forward_mode == 0) then return f0(...) end
      local on_tape = rawequal(trace, tracing.tape)
      local fwd_args = {}
      for i = 1, args.n do
        fwd_args[i] = tree.map(function(l)
          if not is_array(l) then return l end
          if on_tape then return core.trace_of(l) and core.strip(l) or l end
          return hl.stop_gradient(l)
        end, args[i])
      end
      local out
      if on_tape then
        -- the tape stays closed while f runs on bare data: nothing of it is recorded
        local saved = tracing.tape
        tracing.tape = nil
        local ok, res = pcall(f, unpack(fwd_args, 1, args.n))
        tracing.tape = saved
        if not ok then error(res, 0) end
        out = res
      else
        out = f(unpack(fwd_args, 1, args.n))
      end
      local leaves, def = tree.flatten(out)
      if not on_tape then check_closures(trace, fwd_args, args.n, leaves) end
      for j, l in ipairs(leaves) do
        if type(l) == "number" then
          leaves[j] = hl.array(l)
        elseif not is_array(l) then
          fail("checkpoint: the function must return arrays or tables of them, got a %s", type(l))
        elseif on_tape and core.trace_of(l) then
          fail(CLOSURE)
        end
      end
      local ins = {}
      for k, l in ipairs(flat) do ins[k] = is_array(l) and ad.node_in(trace, l) or -1 end
      -- the arguments the derivative runs of f take (trees of arrays and numbers); the others
      -- (strings, booleans, functions, tables of them) are passed to f as they are
      local dyn, nleaves = {}, {}
      for i = 1, args.n do
        local ls = tree.flatten(args[i])
        local arrays, others = 0, 0
        for _, l in ipairs(ls) do
          if is_array(l) or type(l) == "number" then arrays = arrays + 1 else others = others + 1 end
        end
        if arrays > 0 and others > 0 then
          fail("checkpoint: argument %d mixes arrays with other values (%d of them); pass the arrays and the other values as separate arguments",
               i, others)
        end
        if others == 0 then dyn[#dyn + 1] = i end
        nleaves[i] = #ls
      end
      local function g(...)
        local full = {}
        for i = 1, args.n do full[i] = args[i] end
        for j, i in ipairs(dyn) do full[i] = select(j, ...) end
        return f(unpack(full, 1, args.n))
      end
      local dyn_args = {}
      for j, i in ipairs(dyn) do dyn_args[j] = args[i] end
      -- per flat leaf of the arguments, from one value per leaf of the dynamic ones
      local function spread(per_dyn)
        local r, j = {}, 0
        for i = 1, args.n do
          if dyn[j + 1] == i then
            j = j + 1
            for _, c in ipairs(tree.flatten(per_dyn[j])) do r[#r + 1] = c end
          else
            for _ = 1, nleaves[i] do r[#r + 1] = false end
          end
        end
        return r
      end
      -- the reverse rule: run f again, under vjp, with the cotangents the outputs received
      local function bwd(cts)
        local _, vjp_fn = hl.vjp(g, unpack(dyn_args, 1, #dyn))
        local ct = {}
        for j, l in ipairs(leaves) do ct[j] = cts[j] or hl.zeros_like(l) end
        return spread(util.pack(vjp_fn(tree.unflatten(def, ct))))
      end
      -- the forward rule: hl.jvp of f with the arguments' tangents (zeros where none)
      local function jvp(ts)
        local tangents, k, j = {}, 0, 0
        for i = 1, args.n do
          local ls = tree.flatten(args[i])
          if dyn[j + 1] == i then
            j = j + 1
            local t = {}
            for q, l in ipairs(ls) do
              t[q] = ts[k + q] or hl.zeros_like(is_array(l) and l or hl.array(l))
            end
            tangents[j] = tree.unflatten(defs[i], t)
          end
          k = k + #ls
        end
        local _, tout = hl.jvp(g, dyn_args, tangents)
        return (tree.flatten(tout))
      end
      local outs = ad.group(trace, ins, leaves, bwd, jvp)
      local res = tree.unflatten(def, outs)
      return unpack(res, 1, nres)
    end
  end
  hl.remat = hl.checkpoint
end
