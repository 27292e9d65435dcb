-- Automatic differentiation: grad, value_and_grad, vjp, jvp, stop_gradient, custom_vjp (jacfwd,
-- jacrev and hessian are built on these and on vmap in jac.lua).
--
-- How it works. A function is differentiated on a graph of primitives: inside hl.jit that is the
-- jit trace itself, outside it a tape, which runs every op at once (so Lua code can look at values
-- and branch on them) and records it. Each transformation gives its variables fresh nodes (an
-- identity of the argument), runs the function, then walks the recorded nodes between those
-- variables and the outputs with the rules of halua/rules.lua: backwards for reverse mode,
-- forwards for forward mode. The rules are ordinary halua ops, so under jit the derivative joins
-- the same pipeline as the function, and on a tape shared by nested transformations the
-- derivative is itself recorded, which is how derivatives of derivatives work.
return function(hl, core)
  local tracing = require "halua.trace"
  local util = require "halua.util"
  local tree = require "halua.tree"
  local rules = require("halua.rules")(hl, core)
  local is_array = core.is_array
  local unpack = unpack or table.unpack

  local fail = util.fail
  local pack = util.pack
  local shape_str = util.shape_str
  local type_str = util.type_str
  -- the dtypes derivatives flow through (complex ones by JAX's convention: docs/complex.md)
  local function is_float(dtype)
    return dtype == "float32" or dtype == "float64" or dtype == "float16" or dtype == "bfloat16" or dtype == "complex64"
        or dtype == "complex128"
  end

  -- custom_vjp and compiled-loop nodes, per trace: node -> {ins = {nodes}, bwd, group, nargs}
  local customs = setmetatable({}, {__mode = "k"})

  ---------------------------------------------------------------- recording

  -- The graph a transformation records on: the jit trace of a traced argument or of the function
  -- being traced, else the open tape, else a new tape that this call owns.
  local function open_trace(leaves)
    local jt = tracing.stack[#tracing.stack]
    for _, l in ipairs(leaves) do
      if is_array(l) and core.is_tracer(l) then
        local lt = core.trace_of(l)
        -- a value of a trace that encloses the one being traced (a loop body's capture): the
        -- function's ops go to the inner trace, so the derivative is taken there
        for _, t in ipairs(tracing.stack) do
          if rawequal(t, lt) then return jt, false end
        end
        return lt, false
      end
    end
    if jt then return jt, false end
    if tracing.tape then return tracing.tape, false end
    local t = core.tape_new()
    tracing.tape = t
    return t, true
  end

  -- Finish a call that opened the tape: nothing more is recorded; its values stay for the
  -- backward pass (and for vjp's function) until `release`.
  local function stop(trace, owner)
    if owner then
      core.tape_stop(trace)
      tracing.tape = nil
    end
  end

  local function plain(v)
    if is_array(v) and core.trace_of(v) == nil and not core.is_tracer(v) then return core.strip(v) end
    return v
  end
  local function plain_tree(t)
    if type(t) == "table" then return tree.map(plain, t) end
    return plain(t)
  end

  -- argnums: a number or a list of 1-based argument numbers
  local function check_argnums(op, argnums)
    if argnums == nil then return {1}, true end
    local single = type(argnums) == "number"
    local list = single and {argnums} or argnums
    if type(list) ~= "table" or #list == 0 then fail("%s: argnums must be an argument number or a table of them", op) end
    for _, i in ipairs(list) do
      if type(i) ~= "number" or i < 1 or i ~= math.floor(i) then
        fail("%s: argnums must hold 1-based argument numbers, got %s", op, tostring(i))
      end
    end
    return list, single
  end

  -- Replace the leaves of the differentiated arguments by fresh variables and run f.
  -- Returns the trace, whether this call owns it, f's results, and per argument
  -- {def = tree def, vars = {variable or false per leaf}, leaves = original leaves}.
  local function record(op, f, args, argnums, ints)
    local all = {}
    local infos = {}
    for k, i in ipairs(argnums) do
      if i > args.n then fail("%s: argnums asks for argument %d but the function got %d", op, i, args.n) end
      local leaves, def = tree.flatten(args[i])
      for j, l in ipairs(leaves) do
        if type(l) == "number" then
          leaves[j] = hl.array(l)
        elseif not core.usable(l, op) then
          fail("%s: argument %d holds a %s; differentiate with respect to arrays, numbers or tables of them", op, i, type(l))
        elseif not is_float(l.dtype) and ints == "error" then
          fail("%s: argument %d has dtype %s; differentiation needs float inputs (cast it with :astype(\"float32\"), or use hl.vjp, which gives integer inputs zero cotangents)",
               op, i, l.dtype)
        end
        all[#all + 1] = leaves[j]
      end
      infos[k] = {def = def, leaves = leaves, arg = i}
    end
    local trace, owner = open_trace(all)
    local call_args = {}
    for i = 1, args.n do call_args[i] = args[i] end
    for _, info in ipairs(infos) do
      info.vars = {}
      local vals = {}
      for j, l in ipairs(info.leaves) do
        if is_float(l.dtype) then
          info.vars[j] = core.trace_variable(trace, l)
          vals[j] = info.vars[j]
        else
          info.vars[j] = false
          vals[j] = l
        end
      end
      call_args[info.arg] = tree.unflatten(info.def, vals)
    end
    -- control flow traced while a derivative is being taken (reverse mode: tracing.differentiating;
    -- forward mode: tracing.forward_mode): loops stay compiled, and their derivative is a compiled
    -- loop too (control.lua)
    local mode = (op == "jvp" or op == "jacfwd") and "forward_mode" or "differentiating"
    tracing[mode] = (tracing[mode] or 0) + 1
    local ok, res = pcall(function() return pack(f(unpack(call_args, 1, args.n))) end)
    tracing[mode] = tracing[mode] - 1
    stop(trace, owner)
    if not ok then
      if owner then core.trace_close(trace) end
      error(res, 0)
    end
    return trace, owner, res, infos
  end

  local function node_in(trace, x)
    if not is_array(x) then return nil end
    return core.node_in(trace, x)
  end

  -- the values of nodes, fetched once per pass
  local function valuer(trace)
    local cache = {}
    return function(id)
      local v = cache[id]
      if v == nil then
        v = core.node_value(trace, id)
        cache[id] = v
      end
      return v
    end
  end
  local function lazy_inputs(n, value)
    return setmetatable({}, {__index = function(t, k)
      local id = n.ins[k]
      if id == nil then return nil end
      local v = value(id)
      rawset(t, k, v)
      return v
    end})
  end

  ---------------------------------------------------------------- reverse mode

  -- Cotangents of the variable nodes `vars` given cotangents `seeds` = {{node, ct}, ...} of outputs.
  local function backward(trace, vars, seeds)
    local lo, hi = math.huge, -1
    local is_var = {}
    for _, v in ipairs(vars) do
      is_var[v] = true
      if v < lo then lo = v end
    end
    for _, s in ipairs(seeds) do if s[1] > hi then hi = s[1] end end
    local ct = {}
    if hi < lo then return ct end
    local nodes = core.graph_nodes(trace, lo, hi)
    local custom = customs[trace] or {}
    -- which nodes depend on a variable through float values
    local active = {}
    for id = lo, hi do
      local n = nodes[id]
      if is_var[id] then
        active[id] = true
      elseif is_float(n.dtype) and n.op ~= "stop_gradient" then
        local ins = custom[id] and custom[id].ins or n.ins
        for _, i in ipairs(ins) do
          if active[i] then
            active[id] = true
            break
          end
        end
      end
    end
    for _, s in ipairs(seeds) do
      local id, g = s[1], s[2]
      if active[id] then ct[id] = ct[id] and ct[id] + g or g end
    end
    local value = valuer(trace)
    local function give(id, c)
      if c ~= nil and active[id] then ct[id] = ct[id] and ct[id] + c or c end
    end
    local done_groups = {}
    for id = hi, lo, -1 do
      local g = ct[id]
      if g ~= nil and not is_var[id] then
        local n = nodes[id]
        local c = custom[id]
        if c then
          if not done_groups[c.group] then
            done_groups[c.group] = true
            local outs = {}
            for k, oid in ipairs(c.group.nodes) do
              outs[k] = ct[oid] or (c.group.sparse and false) or hl.zeros_like(value(oid))
            end
            local cts = pack(c.bwd(tree.unflatten(c.group.def, outs)))
            local flat = {}
            for k = 1, c.nargs do
              local leaves = tree.flatten(cts[k])
              for _, l in ipairs(leaves) do flat[#flat + 1] = l end
            end
            for k, iid in ipairs(c.ins) do
              if iid >= 0 and is_array(flat[k]) then
                -- a cotangent of another shape would become a gradient of the wrong shape
                local want = value(iid).shape
                if shape_str(flat[k].shape) ~= shape_str(want) then
                  fail("custom_vjp: bwd returned a cotangent of shape %s for input %d of shape %s", shape_str(flat[k].shape),
                       k, shape_str(want))
                end
                give(iid, flat[k])
              end
            end
          end
        else
          local r = rules[n.op]
          if r == nil then fail("grad: no differentiation rule for %s", n.op) end
          if r.deriv then
            local d = r.deriv(lazy_inputs(n, value), value(id), n)
            for k, iid in ipairs(n.ins) do
              if active[iid] and d[k] ~= nil then give(iid, d[k] == 1 and g or g * d[k]) end
            end
          elseif r.vjp then
            local cts = r.vjp(g, n, lazy_inputs(n, value), value(id))
            for k, iid in ipairs(n.ins) do
              if active[iid] then give(iid, cts[k]) end
            end
          end
        end
        ct[id] = nil
      end
    end
    return ct
  end

  -- gradient trees for the arguments of `infos` from the cotangents of their variables
  local function gather(trace, infos, ct)
    local out = {}
    for k, info in ipairs(infos) do
      local leaves = {}
      for j, l in ipairs(info.leaves) do
        local var = info.vars[j]
        local node = var and node_in(trace, var)
        local c = node and ct[node] or nil
        leaves[j] = c == nil and hl.zeros_like(var or l) or c
      end
      out[k] = info.def == "*" and leaves[1] or tree.unflatten(info.def, leaves)
    end
    return out
  end

  local function var_nodes(trace, infos)
    local nodes = {}
    for _, info in ipairs(infos) do
      for _, v in ipairs(info.vars) do
        if v then nodes[#nodes + 1] = node_in(trace, v) end
      end
    end
    return nodes
  end

  local function scalar_output(op, out)
    if type(out) == "number" then return nil end
    if not is_array(out) then fail("%s: the function must return a scalar array, got a %s", op, type(out)) end
    if out.ndim ~= 0 then
      fail("%s: the function must return a scalar (a 0-d array) but returned %s; reduce it first, e.g. with :sum() or :mean()",
           op, type_str(out))
    end
    if out.dtype == "complex64" or out.dtype == "complex128" then
      fail("%s: the function must return a real scalar but returned %s; differentiate hl.real(f(x)) or hl.abs(f(x)) (JAX's grad asks the same)",
           op, type_str(out))
    end
    if not is_float(out.dtype) then
      fail("%s: the function must return a float scalar but returned %s", op, type_str(out))
    end
    return out
  end

  local function value_and_grad_impl(op, f, argnums, opts)
    if type(f) ~= "function" and not (type(f) == "table" and getmetatable(f) and getmetatable(f).__call) then
      fail("%s: expected a function, got %s", op, type(f))
    end
    opts = util.options(op, opts, {"has_aux"}, "{has_aux = true}")
    local list, single = check_argnums(op, argnums)
    local has_aux = opts and opts.has_aux
    return function(...)
      local args = pack(...)
      local trace, owner, res, infos = record(op, f, args, list, "error")
      if has_aux and res.n < 2 then
        if owner then core.trace_close(trace) end
        fail("%s: has_aux is set, so the function must return two values (the output and the auxiliary data)", op)
      end
      local out = res[1]
      local ok, err = pcall(scalar_output, op, out)
      if not ok then
        if owner then core.trace_close(trace) end
        error(err, 0)
      end
      local ct = {}
      local onode = node_in(trace, out)
      if onode then
        ct = backward(trace, var_nodes(trace, infos), {{onode, hl.ones_like(out)}})
      end
      local grads = gather(trace, infos, ct)
      local g = single and grads[1] or grads
      local value, aux = out, res[2]
      if type(value) == "number" then value = hl.array(value) end
      if owner then
        value, g, aux = plain_tree(value), plain_tree(g), has_aux and plain_tree(aux) or nil
        core.trace_close(trace)
      end
      if has_aux then return value, g, aux end
      return value, g
    end
  end

  function hl.value_and_grad(f, argnums, opts)
    if type(argnums) == "table" and opts == nil and argnums[1] == nil and next(argnums) ~= nil then
      argnums, opts = nil, argnums   -- value_and_grad(f, {has_aux = true})
    end
    return value_and_grad_impl("value_and_grad", f, argnums, opts)
  end

  function hl.grad(f, argnums, opts)
    if type(argnums) == "table" and opts == nil and argnums[1] == nil and next(argnums) ~= nil then
      argnums, opts = nil, argnums
    end
    local vg = value_and_grad_impl("grad", f, argnums, opts)
    local has_aux = opts and opts.has_aux
    return function(...)
      local _, g, aux = vg(...)
      if has_aux then return g, aux end
      return g
    end
  end

  -- the cotangent tree ct must match the output tree out: structure, shapes, dtypes
  local function check_like(op, what, got, want, idx)
    local gl, gd = tree.flatten(got)
    local wl, wd = tree.flatten(want)
    if gd ~= wd then fail("%s: %s %d has a different tree structure than its primal", op, what, idx) end
    for j, w in ipairs(wl) do
      local g = gl[j]
      if type(g) == "number" then
        g = hl.full(is_array(w) and w.shape or {}, g, is_array(w) and w.dtype or "float32")
        gl[j] = g
      end
      if not is_array(g) then fail("%s: %s %d holds a %s, expected an array", op, what, idx, type(g)) end
      if is_array(w) then
        local ws, gs = w.shape, g.shape
        local same = #ws == #gs
        for a = 1, #ws do same = same and ws[a] == gs[a] end
        if not same or g.dtype ~= w.dtype then
          fail("%s: %s %d is %s but its primal is %s; they must have the same shape and dtype", op, what, idx, type_str(g), type_str(w))
        end
      end
    end
    return gl
  end

  function hl.vjp(f, ...)
    local args = pack(...)
    local list = {}
    for i = 1, args.n do list[i] = i end
    local trace, owner, res, infos = record("vjp", f, args, list, "zero")
    if res.n > 1 then
      if owner then core.trace_close(trace) end
      fail("vjp: the function returned %d values; return one array or table of arrays", res.n)
    end
    local out = res[1]
    local out_leaves, out_def = tree.flatten(out)
    local nodes = {}
    for j, l in ipairs(out_leaves) do nodes[j] = node_in(trace, l) or false end
    local vars = var_nodes(trace, infos)
    local function vjp_fn(ct)
      local cl = check_like("vjp", "cotangent", ct, out, 1)
      local seeds = {}
      for j, node in ipairs(nodes) do
        if node then seeds[#seeds + 1] = {node, cl[j]} end
      end
      local cts = gather(trace, infos, backward(trace, vars, seeds))
      if owner then cts = plain_tree(cts) end
      return unpack(cts, 1, #infos)
    end
    if owner then out = plain_tree(out) end
    local _ = out_def
    return out, vjp_fn
  end

  ---------------------------------------------------------------- forward mode

  -- Tangents of `outs` (nodes) given tangents of variable nodes: tangents = {node -> array}.
  local function forward(trace, tangents, outs)
    local lo, hi = math.huge, -1
    for id in pairs(tangents) do if id < lo then lo = id end end
    for _, o in ipairs(outs) do if o and o > hi then hi = o end end
    local t = {}
    for id, v in pairs(tangents) do t[id] = v end
    if hi < lo then return t end
    local nodes = core.graph_nodes(trace, lo, hi)
    local custom = customs[trace] or {}
    -- the nodes the outputs depend on (a compiled loop's results: on the loop's inputs, not on
    -- the loop node, which has no rule of its own)
    local needed = {}
    for _, o in ipairs(outs) do if o then needed[o] = true end end
    for id = hi, lo, -1 do
      if needed[id] then
        local c = custom[id]
        for _, i in ipairs(c and c.group.jvp and c.ins or nodes[id].ins) do needed[i] = true end
      end
    end
    local value = valuer(trace)
    local done_groups = {}
    for id = lo, hi do
      local n = nodes[id]
      local c = custom[id]
      if c and needed[id] and c.group.jvp then
        -- a compiled loop's results: their tangents come from its tangent loop, built once
        if not done_groups[c.group] then
          done_groups[c.group] = true
          local ts, any = {}, false
          for k, i in ipairs(c.ins) do
            if i >= 0 and t[i] ~= nil then ts[k], any = t[i], true end
          end
          if any then
            local touts = c.group.jvp(ts)
            for k, oid in ipairs(c.group.nodes) do t[oid] = touts[k] end
          end
        end
      elseif c and needed[id] then
        for _, i in ipairs(c.ins) do
          if t[i] ~= nil then fail("jvp: functions made with hl.custom_vjp have no forward-mode rule; use grad, vjp or jacrev") end
        end
      elseif needed[id] and not tangents[id] and is_float(n.dtype) and n.op ~= "stop_gradient" then
        local ts, any = {}, false
        for k, i in ipairs(n.ins) do
          ts[k] = t[i]
          any = any or t[i] ~= nil
        end
        if any then
          local r = rules[n.op]
          if r == nil then fail("jvp: no differentiation rule for %s", n.op) end
          if r.deriv then
            local d = r.deriv(lazy_inputs(n, value), value(id), n)
            local acc
            for k = 1, #n.ins do
              if ts[k] ~= nil and d[k] ~= nil then
                local term = d[k] == 1 and ts[k] or ts[k] * d[k]
                acc = acc and acc + term or term
              end
            end
            t[id] = acc
          elseif r.jvp then
            t[id] = r.jvp(ts, n, lazy_inputs(n, value), value(id))
          end
        end
      end
    end
    return t
  end

  function hl.jvp(f, primals, tangents)
    if type(primals) ~= "table" or type(tangents) ~= "table" then
      fail("jvp: pass primals and tangents as tables: hl.jvp(f, {x}, {t})")
    end
    if #primals ~= #tangents then
      fail("jvp: %d primals but %d tangents", #primals, #tangents)
    end
    local args = pack(unpack(primals, 1, #primals))
    local list = {}
    for i = 1, args.n do list[i] = i end
    local tl = {}
    for i = 1, args.n do
      local p = args[i]
      if type(p) == "number" then p = hl.array(p) end
      tl[i] = check_like("jvp", "tangent", tangents[i], p, i)
    end
    local trace, owner, res, infos = record("jvp", f, args, list, "zero")
    local seeds = {}
    for k, info in ipairs(infos) do
      for j, v in ipairs(info.vars) do
        if v then seeds[node_in(trace, v)] = hl.astype(tl[k][j], v.dtype) end
      end
    end
    local out = res[1]
    local leaves, def = tree.flatten(out)
    local onodes = {}
    for j, l in ipairs(leaves) do onodes[j] = node_in(trace, l) or false end
    local ok, t = pcall(forward, trace, seeds, onodes)
    if not ok then
      if owner then core.trace_close(trace) end
      error(t, 0)
    end
    local touts = {}
    for j, l in ipairs(leaves) do
      local tv = onodes[j] and t[onodes[j]]
      if tv == nil then tv = is_array(l) and hl.zeros_like(l) or 0 end
      touts[j] = tv
    end
    local tout = def == "*" and touts[1] or tree.unflatten(def, touts)
    if owner then
      out, tout = plain_tree(out), plain_tree(tout)
      core.trace_close(trace)
    end
    return out, tout
  end

  ---------------------------------------------------------------- stop_gradient, custom_vjp

  -- Values `leaves` of a trace whose derivative bwd gives: they stand for fresh nodes that
  -- depend, for autodiff, on the nodes `ins` (-1: none). bwd(cts) gets the outputs' cotangents as
  -- the tree `def` and returns `nargs` trees whose leaves line up with `ins`.
  local function custom_group(trace, ins, leaves, def, bwd, nargs, sparse, jvp)
    local group = {def = def, nodes = {}, sparse = sparse, jvp = jvp}
    local reg = customs[trace] or {}
    customs[trace] = reg
    local outs = {}
    for j, l in ipairs(leaves) do
      local v = core.trace_variable(trace, hl.stop_gradient(l))
      local node = node_in(trace, v)
      group.nodes[j] = node
      reg[node] = {ins = ins, bwd = bwd, group = group, nargs = nargs}
      outs[j] = v
    end
    return outs
  end

  local stop_prim = core.prims.stop_gradient
  function hl.stop_gradient(x)
    if type(x) == "table" and not is_array(x) then
      return tree.map(function(l) return is_array(l) and stop_prim(l) or l end, x)
    end
    if type(x) == "number" then return x end
    return stop_prim(x)
  end

  function hl.custom_vjp(f, fwd, bwd)
    for i, g in ipairs {f, fwd, bwd} do
      if type(g) ~= "function" then fail("custom_vjp: argument %d must be a function, got %s", i, type(g)) end
    end
    return function(...)
      local args = pack(...)
      local trace
      local flat = {}
      for i = 1, args.n do
        for _, l in ipairs(tree.flatten(args[i])) do
          flat[#flat + 1] = l
          if not trace and is_array(l) then trace = core.trace_of(l) end
        end
      end
      if not trace then return f(...) end
      local res = pack(fwd(...))
      if res.n < 2 then fail("custom_vjp: fwd must return two values: the output and the residuals for bwd") end
      local out, residuals = res[1], res[2]
      local leaves, def = tree.flatten(out)
      for _, l in ipairs(leaves) do
        if not is_array(l) then fail("custom_vjp: fwd's output holds a %s; return arrays", type(l)) end
      end
      local ins = {}
      for k, l in ipairs(flat) do ins[k] = node_in(trace, l) or -1 end
      local outs = custom_group(trace, ins, leaves, def, function(cts) return bwd(residuals, cts) end, args.n)
      return def == "*" and outs[1] or tree.unflatten(def, outs)
    end
  end

  -- for compiled loops (control.lua) and the Jacobians (jac.lua), which init.lua hands this table:
  -- the reverse and forward passes, and groups whose bwd gets
  -- false for outputs that received no cotangent and whose jvp(ts) gives the outputs' tangents
  -- (nil for none) from the tangents ts of `ins` (nil where none)
  local internals = {
    backward = backward,
    forward = forward,
    -- and for the Jacobians (jac.lua): recording a call, its variables, its gradients
    record = record,
    gather = gather,
    var_nodes = var_nodes,
    node_in = node_in,
    plain_tree = plain_tree,
    check_argnums = check_argnums,
    group = function(trace, ins, leaves, bwd, jvp)
      local _, def = tree.flatten(leaves)
      return custom_group(trace, ins, leaves, def, bwd, 1, true, jvp)
    end,
  }

  return rules, internals
end
