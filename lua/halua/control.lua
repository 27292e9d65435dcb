-- Structured control flow: hl.cond, hl.switch, hl.while_loop, hl.fori_loop, hl.scan, carrying
-- pytrees. Outside hl.jit they run as Lua control flow (so they record onto autodiff's tape like
-- any other ops). Inside hl.jit, cond and switch trace every branch and choose with `where`;
-- loops are compiled: the body is traced once into a program of its own, and the enclosing
-- pipeline runs it from C (engine/runtime/hl_loop.h), so compile time does not grow with the number
-- of steps, on the CPU and on CUDA. Under autodiff inside jit, loops stay compiled and their
-- derivative is a compiled loop too: in reverse mode (fori_loop and scan) a loop that runs the
-- steps backwards, in forward mode (all three) a loop that carries the tangents. Under vmap
-- inside jit they are batched into compiled loops.
return function(hl, core, lower)
  local tracing = require "halua.trace"
  -- what ad.lua and vmap.lua give compiled loops (init.lua hands them over)
  local ad, batch_replay, with_batch_of = lower.ad, lower.batch_replay, lower.with_batch
  local util = require "halua.util"
  local symdim = require "halua.symdim"   -- a fori loop's bounds may be sizes of dynamic_axes
  local tree = hl.tree
  local is_array = core.is_array
  local fail = util.fail

  -- the path of each leaf, in tree.flatten's order: "[2].w" names the leaf to the user
  local function leaf_paths(t, prefix, out)
    out = out or {}
    prefix = prefix or ""
    if type(t) ~= "table" then
      out[#out + 1] = prefix == "" and "(the value itself)" or prefix
      return out
    end
    for i = 1, #t do leaf_paths(t[i], prefix .. "[" .. i .. "]", out) end
    local keys = {}
    for k in pairs(t) do if type(k) == "string" then keys[#keys + 1] = k end end
    table.sort(keys)
    for _, k in ipairs(keys) do leaf_paths(t[k], prefix .. "." .. k, out) end
    return out
  end

  local function describe(x)
    if is_array(x) then return x.dtype .. "[" .. table.concat(x.shape, ",") .. "]" end
    return type(x)
  end

  -- numbers and booleans in a carry become arrays, so every step sees the same kinds of leaves
  local function as_leaves(op, what, t)
    local leaves, def = tree.flatten(t)
    for i, l in ipairs(leaves) do
      if type(l) == "number" or type(l) == "boolean" then
        leaves[i] = hl.asarray(l)
      elseif not core.usable(l, op) then
        fail("%s: %s leaf %s is a %s; leaves must be arrays, numbers or booleans", op, what, leaf_paths(t)[i], type(l))
      end
    end
    return leaves, def
  end

  -- a tree drawn with * for each leaf, in tree.flatten's order: {*, {*}, w = *}
  local function drawn(t, out)
    if type(t) ~= "table" then
      out[#out + 1] = "*"
      return
    end
    out[#out + 1] = "{"
    local first = true
    local function sep()
      if not first then out[#out + 1] = ", " end
      first = false
    end
    for i = 1, #t do
      sep()
      drawn(t[i], out)
    end
    local keys = {}
    for k in pairs(t) do if type(k) == "string" then keys[#keys + 1] = k end end
    table.sort(keys)
    for _, k in ipairs(keys) do
      sep()
      out[#out + 1] = (k:match("^[%a_][%w_]*$") and k or string.format("[%q]", k)) .. " = "
      drawn(t[k], out)
    end
    out[#out + 1] = "}"
  end

  -- a tree's structure in words, for messages: "a single value", "{*, {*}} (a table of 2 leaves)"
  local function structure(t, n)
    if t == nil then return "nothing (nil)" end
    if type(t) ~= "table" then return "a single value" end
    local out = {}
    drawn(t, out)
    local s = table.concat(out)
    if #s > 120 then s = s:sub(1, 117) .. "..." end
    return string.format("%s (a table of %d lea%s)", s, n, n == 1 and "f" or "ves")
  end

  -- b must have a's structure, shapes and dtypes: names the first leaf that differs
  local function check_same(op, what, ref, a_tree, a_leaves, a_def, b)
    if b == nil then fail("%s: %s is nothing (nil): return the new value, of the structure of %s", op, what, ref) end
    local b_leaves, b_def = as_leaves(op, what, b)
    if #b_leaves ~= #a_leaves or b_def ~= a_def then   -- ({c} for c, or {a, {b}} for {{a}, b})
      fail("%s: %s is %s, but %s is %s: they must have the same structure (* is a leaf: an array or a number)", op, what,
           structure(b, #b_leaves), ref, structure(a_tree, #a_leaves))
    end
    local paths = leaf_paths(a_tree)
    for i, l in ipairs(b_leaves) do
      local ref = a_leaves[i]
      if l.dtype ~= ref.dtype or table.concat(l.shape, ",") ~= table.concat(ref.shape, ",") then
        fail("%s: %s leaf %s is %s, expected %s", op, what, paths[i], describe(l), describe(ref))
      end
    end
    return b_leaves
  end

  local function is_concrete(x) return not (is_array(x) and core.is_tracer(x)) end

  local function truth(op, p)
    if type(p) == "boolean" then return p end
    if type(p) == "number" then return p ~= 0 end
    if not is_array(p) then fail("%s: the predicate is a %s, expected a boolean, a number or a 0-d array", op, type(p)) end
    if p.ndim ~= 0 then fail("%s: the predicate must be a 0-d array, got %s", op, describe(p)) end
    return p:item() ~= 0 and p:item() ~= false
  end

  local function check_fn(op, f, what)
    if type(f) ~= "function" and not (type(f) == "table" and getmetatable(f) and getmetatable(f).__call) then
      fail("%s: %s must be a function, got %s", op, what, type(f))
    end
  end

  -- branches traced and joined by `where` on the (traced) selector
  local function join(op, results, choose)
    local first_leaves, def = as_leaves(op, "the first branch's result", results[1])
    local all = {first_leaves}
    for k = 2, #results do
      all[k] = check_same(op, "branch " .. k .. "'s result", "the first branch's result", results[1], first_leaves, def, results[k])
    end
    local out = {}
    for i = 1, #first_leaves do
      local col = {}
      for k = 1, #all do col[k] = all[k][i] end
      out[i] = choose(col)
    end
    return tree.unflatten(def, out)
  end

  function hl.cond(pred, true_fn, false_fn, ...)
    check_fn("cond", true_fn, "true_fn")
    check_fn("cond", false_fn, "false_fn")
    if is_concrete(pred) then
      if truth("cond", pred) then return true_fn(...) end
      return false_fn(...)
    end
    if pred.ndim ~= 0 then fail("cond: the predicate must be a 0-d array, got %s", describe(pred)) end
    local c = pred.dtype == "bool" and pred or hl.ne(pred, 0)
    local t, f = true_fn(...), false_fn(...)
    local ok, r = pcall(join, "cond", {t, f}, function(col) return hl.where(c, col[1], col[2]) end)
    if not ok then error((r:gsub("branch 2's result", "the false branch's result"):gsub("the first branch's result", "the true branch's result")), 0) end
    return r
  end

  local function branch_index(op, i, n)
    -- out-of-range indices clamp to the first or last branch, as JAX's switch does
    if type(i) ~= "number" then
      if not is_array(i) or i.ndim ~= 0 then fail("%s: the index must be a number or a 0-d integer array, got %s", op, describe(i)) end
      if i.dtype ~= "int32" and i.dtype ~= "int64" and i.dtype ~= "uint8" and i.dtype ~= "int8" then
        fail("%s: the index must be an integer, got %s", op, describe(i))
      end
      i = i:item()
    end
    if i ~= math.floor(i) then fail("%s: the index must be an integer, got %s", op, tostring(i)) end
    return math.max(1, math.min(n, i))
  end

  function hl.switch(i, branches, ...)
    if type(branches) ~= "table" or #branches == 0 then fail("switch: branches must be a non-empty list of functions") end
    for k, f in ipairs(branches) do check_fn("switch", f, "branch " .. k) end
    if is_concrete(i) then return branches[branch_index("switch", i, #branches)](...) end
    if i.ndim ~= 0 or (i.dtype ~= "int32" and i.dtype ~= "int64" and i.dtype ~= "uint8" and i.dtype ~= "int8") then
      fail("switch: the index must be a 0-d integer array, got %s", describe(i))
    end
    local results = {}
    for k, f in ipairs(branches) do results[k] = f(...) end
    local n = #branches
    return join("switch", results, function(col)
      local r = col[n]
      for k = n - 1, 1, -1 do r = hl.where(hl.le(i, k), col[k], r) end   -- i <= 1 takes the first
      return r
    end)
  end

  ---------------------------------------------------------------- compiled loops

  -- the jit trace a loop is compiled into, or nil (outside jit, or batched by vmap where the
  -- replay cannot batch it); whether reverse-mode autodiff is recording there, and whether
  -- forward-mode autodiff is
  local function vmap_trace(t) return tracing.vmap_traces and tracing.vmap_traces[t] end
  local function loop_trace()
    local t = tracing.stack[#tracing.stack]
    if not t then return nil end
    -- under vmap, loops compile in the vmap trace itself when its replay can batch them
    if (tracing.batching or 0) > 0 and not vmap_trace(t) then return nil end
    return t, (tracing.differentiating or 0) > 0, (tracing.forward_mode or 0) > 0
  end

  -- fn(args) traced into a trace nested in `parent`, with one argument per spec
  local function sub_trace(parent, specs, fn)
    local t = core.trace_new(parent)
    local device = core.trace_device(parent) == "cpu" and 0 or 1   -- the body runs where its pipeline does
    local args = {}
    for i, s in ipairs(specs) do args[i] = core.trace_arg(t, s.dtype, s.shape, device) end
    local stack = tracing.stack
    stack[#stack + 1] = t
    local ok, res = pcall(fn, args)
    stack[#stack] = nil
    if not ok then
      core.trace_close(t)
      error(res, 0)
    end
    return t, res
  end

  -- results of a body must be values of its trace: enclosing values and constants pass through
  -- an identity node
  local function own(t, leaves)
    for i, l in ipairs(leaves) do
      if not core.node_in(t, l) then leaves[i] = core.trace_variable(t, l) end
    end
    return leaves
  end

  local function specs_of(leaves, drop_first)
    local s = {}
    for i, l in ipairs(leaves) do
      local shape = l.shape
      if drop_first then table.remove(shape, 1) end
      s[i] = {dtype = l.dtype, shape = shape}
    end
    return s
  end

  -- A loop recorded in a vmap trace keeps its body trace open until the vmap has replayed it:
  -- its batching rule replays the body (remember, below).
  local remember
  local function record(spec)
    local keep = vmap_trace(spec.trace)
    local ok, r = pcall(function() return {core.loop_record(spec)} end)
    if not (ok and keep) then
      core.trace_close(spec.body)
      if spec.cond then core.trace_close(spec.cond) end
    end
    if not ok then error(r, 0) end
    if keep then remember(spec, r) end
    return r
  end


  local function is_float(x)
    local d = x.dtype
    return d == "float32" or d == "float64" or d == "float16" or d == "bfloat16"
  end

  local function same_value(a, b)
    local ta, na = core.trace_of(a)
    local tb, nb = core.trace_of(b)
    return ta ~= nil and rawequal(ta, tb) and na == nb
  end

  -- the node that stands for x in trace t: its own, or the parameter that captures it there
  local function node_for(t, x)
    local id = core.node_in(t, x)
    if id then return id end
    local v = core.node_in(t, core.trace_variable(t, x))
    return core.graph_nodes(t, v, v)[v].ins[1]
  end

  local function reversed(x) return hl.flip(x, 1) end

  -- fn(...) with ops on values of enclosing traces recorded in trace t rather than hoisted out
  -- of it (hl_trace_set_floor): the forward body and its backward steps then capture the same
  -- values, whose cotangents the backward loop sums
  local floor
  local function on_floor(t, fn, ...)
    local saved = floor
    floor = t
    core.trace_floor(t)
    local res = {n = select("#", ...) + 1, pcall(fn, ...)}
    floor = saved
    core.trace_floor(saved)
    if not res[1] then error(res[2], 0) end
    return unpack(res, 2)
  end
  local function as_dtype_of(g, x) return g.dtype == x.dtype and g or hl.astype(g, x.dtype) end

  -- The abstract captures of body trace bt, each with its slot among the loop node's inputs: the
  -- carries and scanned arrays `inputs` when it is one of them, else after them, in the order
  -- engine/lua/hl_lua_loop.c gives them. Returns the captures and the number of new inputs.
  local function loop_captures(bt, inputs)
    local captures, pids, caps, nextra = core.trace_captures(bt), {}, {}, 0
    for pid in pairs(captures) do pids[#pids + 1] = pid end
    table.sort(pids)
    for _, pid in ipairs(pids) do
      local v = captures[pid]
      if core.is_tracer(v) then
        local slot
        for k, w in ipairs(inputs) do if not slot and same_value(v, w) then slot = k end end
        if not slot then
          nextra = nextra + 1
          slot = #inputs + nextra
        end
        caps[#caps + 1] = {value = v, slot = slot, pid = pid}
      end
    end
    return caps, nextra
  end

  ---------------------------------------------------------------- forward mode through compiled loops

  -- Under hl.jvp and hl.jacfwd inside jit, loops still compile. A loop's tangents come from a
  -- second compiled loop, its tangent loop, whose carries are the loop's carries and beside them
  -- the float carries' tangents (a scan also stacks its outputs' tangents): each step is the body
  -- traced again at the carry, then differentiated forward from the tangents of its arguments
  -- and of its captures (JAX's jvp of a loop). The primal steps run again in the tangent loop,
  -- as they must: every tangent step needs its carry. A loop is described to it by
  --   prog(args) -> outs, its body over a list of arguments (fori: the step index, then the
  --     carries; scan: the carries, then a row of each scanned array; while: the carries) whose
  --     results are the new carries, then (scan) the step outputs;
  --   cond(carries), a while loop's condition;
  --   c, x: the loop's carries and scanned arrays; caps: the body's captures (loop_captures).

  -- prog's results at `args` (values of the current trace) and the tangents of its float results,
  -- given the tangents `targs` of args (nil where none) and `ctan` of the captures
  local function tangent_step(prog, args, targs, caps, ctan)
    local t = tracing.stack[#tracing.stack]
    return on_floor(t, function()
      local vars, seeds = {}, {}
      for k, a in ipairs(args) do
        vars[k] = a
        if targs[k] ~= nil then
          vars[k] = core.trace_variable(t, a)
          seeds[core.node_in(t, vars[k])] = as_dtype_of(targs[k], a)
        end
      end
      for j, c in ipairs(caps) do
        if ctan[j] ~= nil then seeds[node_for(t, c.value)] = as_dtype_of(ctan[j], c.value) end
      end
      -- loops inside the body are differentiated in turn
      tracing.forward_mode = (tracing.forward_mode or 0) + 1
      local ok, outs = pcall(prog, vars)
      tracing.forward_mode = tracing.forward_mode - 1
      if not ok then error(outs, 0) end
      outs = own(t, outs)   -- a result that is a capture passes its tangent on
      local onodes = {}
      for q, o in ipairs(outs) do onodes[q] = core.node_in(t, o) end
      local tan = ad.forward(t, seeds, onodes)
      local touts = {}
      for q, o in ipairs(outs) do
        if is_float(o) then
          local g = tan[onodes[q]]
          touts[q] = g and as_dtype_of(g, o) or hl.zeros_like(o)
        end
      end
      return outs, touts
    end)
  end

  -- The tangents of a loop's results (nil for none), given the tangents ts of the loop node's
  -- inputs (carries, scanned arrays, captures; nil where none).
  local function tangent_loop(s, ts)
    local nc, nx = #s.c, #s.x
    local ctan = {}
    for j, c in ipairs(s.caps) do ctan[j] = ts[c.slot] end
    local fc, dc = {}, {}   -- the float carries and their tangents
    for k, l in ipairs(s.c) do
      if is_float(l) then
        fc[#fc + 1] = k
        dc[#fc] = ts[k] and as_dtype_of(ts[k], l) or hl.zeros_like(l)
      end
    end
    local first = s.kind == "fori" and 1 or 0
    local fx = {}   -- the scanned arrays with tangents (scan)
    -- one step of the tangent loop: the body at the carry, and the new tangents
    local function step(i, carry, row)
      local args, targs = {i}, {}
      for k = 1, nc do args[first + k] = carry.c[k] end
      for q, k in ipairs(fc) do targs[first + k] = carry.dc[q] end
      for k = 1, nx do args[nc + k] = row.x[k] end
      for q, k in ipairs(fx) do targs[nc + k] = row.dx[q] end
      local outs, touts = tangent_step(s.prog, args, targs, s.caps, ctan)
      local new = {c = {unpack(outs, 1, nc)}, dc = {}}
      for q, k in ipairs(fc) do new.dc[q] = touts[k] end
      return new, outs, touts
    end
    local result = {}
    if s.kind == "scan" then
      local dx = {}
      for k, l in ipairs(s.x) do
        if is_float(l) and ts[nc + k] ~= nil then
          fx[#fx + 1] = k
          dx[#fx] = as_dtype_of(ts[nc + k], l)
        end
      end
      local fy   -- the float step outputs
      local final, stacked = hl.scan(function(carry, row)
        local new, outs, touts = step(nil, carry, row)
        local ys = {}
        fy = {}
        for q = nc + 1, #outs do
          if touts[q] then
            fy[#fy + 1] = q - nc
            ys[#ys + 1] = touts[q]
          end
        end
        if #ys == 0 then ys[1] = hl.zeros({}, "float32") end   -- scan stacks at least one output
        return new, ys
      end, {c = s.c, dc = dc}, {x = s.x, dx = dx})
      for q, k in ipairs(fy) do result[nc + k] = stacked[q] end
      for q, k in ipairs(fc) do result[k] = final.dc[q] end
      return result
    end
    if #fc == 0 then return result end   -- no float carries: the results have no tangents
    local final
    if s.kind == "fori" then
      final = hl.fori_loop(s.lo, s.hi, function(i, carry) return (step(i, carry)) end, {c = s.c, dc = dc})
    else
      final = hl.while_loop(function(carry) return s.cond(carry.c) end,
                            function(carry) return (step(nil, carry)) end, {c = s.c, dc = dc})
    end
    for q, k in ipairs(fc) do result[k] = final.dc[q] end
    return result
  end

  -- the inputs of the loop node whose first result is r1
  local function loop_inputs(t, r1)
    local first = core.node_in(t, r1)
    return core.graph_nodes(t, first, first)[first].ins
  end

  -- The results r of a compiled loop (record's spec) as values that forward-mode autodiff goes
  -- through, by the tangent loop of s (above; s.caps when the caller has them). bwd: their
  -- reverse-mode derivative, if any.
  local function with_tangents(spec, r, s, bwd)
    s.caps = s.caps or loop_captures(spec.body, spec.inputs)
    s.c, s.x = {unpack(spec.inputs, 1, spec.ncarry)}, {unpack(spec.inputs, spec.ncarry + 1)}
    bwd = bwd or function() fail("%s: internal: reverse-mode autodiff reached a loop compiled for forward mode", spec.name) end
    return ad.group(spec.trace, loop_inputs(spec.trace, r[1]), r, bwd, function(ts) return tangent_loop(s, ts) end)
  end

  -- A loop body, prog(args), traced into a trace nested in t on the floor of the body, so that
  -- its derivative, tracing prog again, captures the same values; with autodiff's `mode` (the
  -- tracing counter: differentiating or forward_mode) off, as the body itself is not being
  -- differentiated (loops inside it compile plainly).
  local function floored_body(t, specs, prog, mode)
    local saved = tracing[mode]
    tracing[mode] = 0
    local ok, bt, res = pcall(sub_trace, t, specs, function(args)
      return on_floor(tracing.stack[#tracing.stack], prog, args)
    end)
    tracing[mode] = saved
    if not ok then error(bt, 0) end
    return bt, res
  end
  local function body_trace(t, specs, prog, forward)
    if forward then return floored_body(t, specs, prog, "forward_mode") end
    return sub_trace(t, specs, prog)
  end

  ---------------------------------------------------------------- the three compiled loops

  local function compiled_fori(t, lo, hi, body_fn, init, leaves, def, forward)
    local specs = specs_of(leaves)
    table.insert(specs, 1, {dtype = "int32", shape = {}})
    local function prog(args)
      local res = body_fn(args[1], tree.unflatten(def, {unpack(args, 2)}))
      return check_same("fori_loop", "body_fn's result", "the initial carry", init, leaves, def, res)
    end
    local bt, res = body_trace(t, specs, prog, forward)
    local spec = {kind = "fori", name = "fori_loop", trace = t, body = bt, body_out = own(bt, res), lo = lo, hi = hi,
                  ncarry = #leaves, inputs = leaves}
    local r = record(spec)
    if forward then r = with_tangents(spec, r, {kind = "fori", lo = lo, hi = hi, prog = prog}) end
    return tree.unflatten(def, r)
  end

  local function compiled_while(t, cond_fn, body_fn, init, leaves, def, forward)
    local function cond(c)
      local p = cond_fn(tree.unflatten(def, c))
      if type(p) == "boolean" or type(p) == "number" then p = hl.asarray(p) end
      if not is_array(p) or p.ndim ~= 0 then
        fail("while_loop: cond_fn must return a boolean or a 0-d array, got %s", describe(p))
      end
      return p.dtype == "bool" and p or hl.ne(p, 0)
    end
    local ct, p = sub_trace(t, specs_of(leaves), function(args) return {cond(args)} end)
    local function prog(args)
      return check_same("while_loop", "body_fn's result", "the initial carry", init, leaves, def, body_fn(tree.unflatten(def, args)))
    end
    local ok, bt, res = pcall(body_trace, t, specs_of(leaves), prog, forward)
    if not ok then
      core.trace_close(ct)
      error(bt, 0)
    end
    local spec = {kind = "while", name = "while_loop", trace = t, body = bt, body_out = own(bt, res),
                  cond = ct, cond_out = own(ct, p), ncarry = #leaves, inputs = leaves}
    local r = record(spec)
    if forward then r = with_tangents(spec, r, {kind = "while", cond = cond, prog = prog}) end
    return tree.unflatten(def, r)
  end

  local function compiled_scan(t, f, init, c_leaves, c_def, x_leaves, x_def, n, forward)
    local specs = specs_of(c_leaves)
    for _, s in ipairs(specs_of(x_leaves, true)) do specs[#specs + 1] = s end
    local nc, y_def = #c_leaves, nil
    local function prog(args)
      local carry = tree.unflatten(c_def, {unpack(args, 1, nc)})
      local new_carry, y = f(carry, tree.unflatten(x_def, {unpack(args, nc + 1)}))
      local out = check_same("scan", "f's carry", "the initial carry", init, c_leaves, c_def, new_carry)
      local y_leaves
      y_leaves, y_def = as_leaves("scan", "f's output", y)
      for _, l in ipairs(y_leaves) do out[#out + 1] = l end
      return out
    end
    local bt, res = body_trace(t, specs, prog, forward)
    local inputs = {unpack(c_leaves)}
    for _, l in ipairs(x_leaves) do inputs[#inputs + 1] = l end
    local spec = {kind = "scan", name = "scan", trace = t, body = bt, body_out = own(bt, res), hi = n,
                  ncarry = nc, inputs = inputs}
    local r = record(spec)
    if forward then r = with_tangents(spec, r, {kind = "scan", prog = prog}) end
    return tree.unflatten(c_def, {unpack(r, 1, nc)}), tree.unflatten(y_def, {unpack(r, nc + 1)})
  end

  ---------------------------------------------------------------- reverse mode through compiled loops

  -- Under hl.grad (value_and_grad, vjp) inside jit, fori_loop and scan still compile. The
  -- forward loop also keeps each step's incoming carry; the derivative is a second compiled loop
  -- that runs the steps backwards, each step the reverse-mode derivative of the body at its carry
  -- (the transpose of a scan, as in JAX). The values the body uses from enclosing traces are its
  -- captures: their cotangents add up in the backward loop's carry. Under a second derivative the
  -- backward loop is differentiated the same way.


  -- The backward loop of a differentiable loop: the cotangents of the loop node's `nins` inputs
  -- (false where there is none) from `cts`, the cotangents of its results (new carries, step
  -- outputs, incoming carries; false where none). caps: the body's captures (loop_captures).
  local function backward_loop(step, c_leaves, x_leaves, caps, nins, ny, cts, residual)
    local nc, nx = #c_leaves, #x_leaves
    local result = {}
    for k = 1, nins do result[k] = false end
    local fc, fx, fcap, fy, fin = {}, {}, {}, {}, {}
    for k, l in ipairs(c_leaves) do if is_float(l) then fc[#fc + 1] = k end end
    for k, l in ipairs(x_leaves) do if is_float(l) then fx[#fx + 1] = k end end
    for j, c in ipairs(caps) do if is_float(c.value) then fcap[#fcap + 1] = j end end
    for k = 1, ny do if cts[nc + k] then fy[#fy + 1] = k end end
    for _, k in ipairs(fc) do if cts[nc + ny + k] then fin[#fin + 1] = k end end
    if #fc + #fx + #fcap == 0 then return result end
    -- scanned backwards: the incoming carries and the scanned arrays (the body's primal inputs),
    -- then the step outputs' and the incoming carries' cotangents
    local xs = {}
    for k = 1, nc do xs[#xs + 1] = reversed(residual[k]) end
    for k = 1, nx do xs[#xs + 1] = reversed(x_leaves[k]) end
    for _, k in ipairs(fy) do xs[#xs + 1] = reversed(cts[nc + k]) end
    for _, k in ipairs(fin) do xs[#xs + 1] = reversed(cts[nc + ny + k]) end
    -- carried: the float carries' cotangents, then the captures' sums (a placeholder if none)
    local init = {}
    for _, k in ipairs(fc) do init[#init + 1] = cts[k] or hl.zeros_like(c_leaves[k]) end
    for _, j in ipairs(fcap) do init[#init + 1] = hl.zeros_like(caps[j].value) end
    local placeholder = #init == 0
    if placeholder then init[1] = hl.zeros({}, "float32") end

    local function step_back_in(t, carry, row)
      local c_i, x_i = {unpack(row, 1, nc)}, {unpack(row, nc + 1, nc + nx)}
      local g_y, g_in, at = {}, {}, nc + nx
      for q, k in ipairs(fy) do g_y[k] = row[at + q] end
      at = at + #fy
      for q, k in ipairs(fin) do g_in[k] = row[at + q] end
      -- variables: fresh nodes for the float inputs, the capturing parameters for the captures
      local vars, cv, xv, cap = {}, {}, {}, {}
      local function variable(x)
        if not is_float(x) then return x end
        local v = core.trace_variable(t, x)
        vars[#vars + 1] = core.node_in(t, v)
        return v
      end
      for k, l in ipairs(c_i) do cv[k] = variable(l) end
      for k, l in ipairs(x_i) do xv[k] = variable(l) end
      for _, j in ipairs(fcap) do
        cap[j] = node_for(t, caps[j].value)
        vars[#vars + 1] = cap[j]
      end
      tracing.differentiating = (tracing.differentiating or 0) + 1
      local ok, new_c, ys = pcall(step, cv, xv)
      tracing.differentiating = tracing.differentiating - 1
      if not ok then error(new_c, 0) end
      local seeds = {}
      for q, k in ipairs(fc) do
        local id = core.node_in(t, new_c[k])
        if id then seeds[#seeds + 1] = {id, carry[q]} end
      end
      for _, k in ipairs(fy) do
        local id = is_float(ys[k]) and core.node_in(t, ys[k])
        if id then seeds[#seeds + 1] = {id, g_y[k]} end
      end
      local ct = ad.backward(t, vars, seeds)
      local new_carry, out = {}, {}
      for q, k in ipairs(fc) do
        local g = ct[core.node_in(t, cv[k])] or hl.zeros_like(c_i[k])
        if g_in[k] then g = g + g_in[k] end
        new_carry[q] = as_dtype_of(g, c_i[k])
      end
      for q, j in ipairs(fcap) do
        local g, sum = ct[cap[j]], carry[#fc + q]
        new_carry[#fc + q] = g and sum + as_dtype_of(g, sum) or sum
      end
      if placeholder then new_carry[1] = carry[1] end
      for q, k in ipairs(fx) do
        out[q] = as_dtype_of(ct[core.node_in(t, xv[k])] or hl.zeros_like(x_i[k]), x_i[k])
      end
      return new_carry, out
    end
    local function step_back(carry, row)
      local t = tracing.stack[#tracing.stack]
      return on_floor(t, step_back_in, t, carry, row)
    end

    local final, ct_xs = hl.scan(step_back, init, xs)
    for q, k in ipairs(fc) do result[k] = final[q] end
    for q, k in ipairs(fx) do result[nc + k] = reversed(ct_xs[q]) end
    for q, j in ipairs(fcap) do
      local slot, sum = caps[j].slot, final[#fc + q]
      result[slot] = result[slot] and result[slot] + sum or sum
    end
    return result
  end

  -- A compiled scan that reverse-mode autodiff can go through: step(c, x) -> new_c, ys (lists of
  -- leaves) over n rows of the scanned arrays x_leaves. Returns the final carries and the
  -- stacked step outputs.
  local function differentiable_loop(t, name, step, c_leaves, x_leaves, n)
    local nc = #c_leaves
    local specs = specs_of(c_leaves)
    for _, s in ipairs(specs_of(x_leaves, true)) do specs[#specs + 1] = s end
    local ny
    -- the forward body: new carries, step outputs, and the incoming carries for the backward loop
    local function prog(args)
      local c = {unpack(args, 1, nc)}
      local new_c, ys = step(c, {unpack(args, nc + 1)})
      ny = #ys
      local o = {}
      for _, l in ipairs(new_c) do o[#o + 1] = l end
      for _, l in ipairs(ys) do o[#o + 1] = l end
      for _, l in ipairs(c) do o[#o + 1] = l end
      return o
    end
    local bt, out = floored_body(t, specs, prog, "differentiating")
    out = own(bt, out)
    local inputs = {unpack(c_leaves)}
    for _, l in ipairs(x_leaves) do inputs[#inputs + 1] = l end
    local caps, nextra = loop_captures(bt, inputs)
    local spec = {kind = "scan", name = name, trace = t, body = bt, body_out = out, hi = n, ncarry = nc, inputs = inputs}
    local r = record(spec)
    local nins = #loop_inputs(t, r[1])
    if nins ~= #inputs + nextra then
      fail("%s: internal: the loop has %d inputs, expected %d", name, nins, #inputs + nextra)
    end
    -- forward mode goes through it too (a Hessian's jacfwd of a jacrev), by its tangent loop
    local results
    results = with_tangents(spec, r, {kind = "scan", prog = prog, caps = caps}, function(cts)
      return backward_loop(step, c_leaves, x_leaves, caps, nins, ny, cts, {unpack(results, nc + ny + 1)})
    end)
    return {unpack(results, 1, nc)}, {unpack(results, nc + 1, nc + ny)}
  end

  local function differentiable_fori(t, lo, hi, body_fn, init, leaves, def, lo_size, hi_size)
    -- bounds that are dynamic sizes (hl.jit's dynamic_axes): the steps made from them are traced,
    -- so that the traces at other sizes differ in sizes only (engine/runtime/hl_poly.c), where
    -- the loop runs at every size
    local anchor = symdim.anchor({lo_size, hi_size})
    local steps = anchor and core.iota("int32", {hi - lo + 1}, 0, anchor) + lo or hl.arange(lo, hi + 1, "int32")
    local carry = differentiable_loop(t, "fori_loop", function(c, x)
      local r = body_fn(x[1], tree.unflatten(def, c))
      return check_same("fori_loop", "body_fn's result", "the initial carry", init, leaves, def, r), {}
    end, leaves, {steps}, hi - lo + 1)
    return tree.unflatten(def, carry)
  end

  local function differentiable_scan(t, f, init, c_leaves, c_def, x_leaves, x_def, n)
    local y_def
    local carry, ys = differentiable_loop(t, "scan", function(c, x)
      local new_c, y = f(tree.unflatten(c_def, c), tree.unflatten(x_def, x))
      local out = check_same("scan", "f's carry", "the initial carry", init, c_leaves, c_def, new_c)
      local y_leaves
      y_leaves, y_def = as_leaves("scan", "f's output", y)
      return out, y_leaves
    end, c_leaves, x_leaves, n)
    return tree.unflatten(c_def, carry), tree.unflatten(y_def, ys)
  end

  ---------------------------------------------------------------- vmap through compiled loops

  -- Under hl.vmap inside jit, loops compile in vmap's trace of one example;
  -- when vmap replays that trace on the batch, a loop's batching rule replays its body on the
  -- batch into the body of a new compiled loop, whose carries carry the batch as their first
  -- axis (scanned arrays and stacked outputs carry it second, steps first).

  local batched_loops = {}                                 -- loop id -> its body and layout
  local bodies_of = setmetatable({}, {__mode = "k"})       -- vmap trace -> its loops' ids

  -- a traced program's parameters: {args = arguments' nodes in order, captures = {[node] =
  -- {slot = loop input} or {value = array}}, out = results' nodes}
  local function program_layout(tr, outs, caps)
    local capture_of = {}
    for pid, v in pairs(core.trace_captures(tr)) do capture_of[pid] = {value = v} end
    for _, c in ipairs(caps) do capture_of[c.pid] = {slot = c.slot} end
    local nodes, args, out = core.graph_nodes(tr, 0, 2 ^ 30), {}, {}
    local k = 0
    while nodes[k] do
      if nodes[k].op == "param" and not capture_of[k] then args[#args + 1] = k end
      k = k + 1
    end
    for q, l in ipairs(outs) do out[q] = core.node_in(tr, l) end
    return {trace = tr, args = args, captures = capture_of, out = out}
  end

  function remember(spec, results)
    local first = core.node_in(spec.trace, results[1])
    local id = core.graph_nodes(spec.trace, first, first)[first].loop
    -- the loop's inputs: carries, scanned arrays, the body's captures, then the condition's
    local caps = loop_captures(spec.body, spec.inputs)
    local info = {kind = spec.kind, name = spec.name, lo = spec.lo, hi = spec.hi, nc = spec.ncarry,
                  nx = #spec.inputs - spec.ncarry, body = program_layout(spec.body, spec.body_out, caps)}
    if spec.cond then
      local known = {unpack(spec.inputs)}
      for _, c in ipairs(caps) do known[c.slot] = c.value end
      info.cond = program_layout(spec.cond, spec.cond_out, loop_captures(spec.cond, known))
    end
    batched_loops[id] = info
    local list = bodies_of[spec.trace] or {}
    bodies_of[spec.trace] = list
    list[#list + 1] = id
  end

  function tracing.hooks.close_loop_bodies(v)
    for _, id in ipairs(bodies_of[v] or {}) do
      local info = batched_loops[id]
      core.trace_close(info.body.trace)
      if info.cond then core.trace_close(info.cond.trace) end
      batched_loops[id] = nil
    end
    bodies_of[v] = nil
  end

  -- v with the batch as its first axis (vmap.lua)
  local function with_batch(v, batched, size) return with_batch_of(v, batched, size) end
  local function swap12(v)
    local perm = {2, 1}
    for d = 3, v.ndim do perm[d] = d end
    return hl.transpose(v, perm)
  end

  local function batch_loop(n, x, b, size)
    local info = batched_loops[n.loop]
    if not info then fail("vmap: internal: compiled loop %d was not kept for batching", n.loop) end
    -- a loop's results are replayed one node each: the first builds the batched loop
    local c = info.replayed
    if c and #c.x == #x then
      local same = true
      for k = 1, #x do same = same and rawequal(c.x[k], x[k]) and c.b[k] == b[k] end
      if same then return c.results[n.result], true end
    end
    local t = tracing.stack[#tracing.stack]
    local nc, nx = info.nc, info.nx
    local inputs, specs, xb = {}, {}, {}
    if info.kind == "fori" then specs[1] = {dtype = "int32", shape = {}} end
    for k = 1, nc do
      inputs[k] = with_batch(x[k], b[k], size)
      specs[#specs + 1] = {dtype = inputs[k].dtype, shape = inputs[k].shape}
    end
    for k = 1, nx do
      xb[k] = b[nc + k]
      local v = xb[k] and swap12(x[nc + k]) or x[nc + k]   -- rows first, then the batch
      inputs[nc + k] = v
      local row = v.shape
      table.remove(row, 1)
      specs[#specs + 1] = {dtype = v.dtype, shape = row}
    end
    local first = info.kind == "fori" and 1 or 0
    -- program p replayed on the new loop's arguments (their batched flags in `flags`)
    local function replay(p, args, flags)
      local bound = {}
      for q, id in ipairs(p.args) do bound[id] = {args[q], flags[q] or false} end
      for pid, cap in pairs(p.captures) do
        bound[pid] = cap.slot and {x[cap.slot], b[cap.slot]} or {cap.value, false}
      end
      local val, bat = batch_replay(p.trace, size, function(id)
        local v = bound[id]
        if v then return v[1], v[2] end
      end, function(v) return v end)
      local o, ob = {}, {}
      for q, id in ipairs(p.out) do o[q], ob[q] = val[id], bat[id] end
      return o, ob
    end
    local flags = {}
    for k = 1, nc do flags[first + k] = true end
    for k = 1, nx do flags[first + nc + k] = xb[k] end
    -- while_loop: steps go on while any example's condition holds; an example whose condition
    -- is false keeps its carry
    local function condition(args)
      local p, pb = replay(info.cond, args, flags)
      return p[1], pb[1]
    end
    local bt, out = sub_trace(t, specs, function(args)
      local o, ob = replay(info.body, args, flags)
      for q = 1, #o do o[q] = with_batch(o[q], ob[q], size) end
      if info.kind == "while" then
        local p, pb = condition(args)
        for q = 1, nc do
          local shape = {size}   -- the batch's conditions against the carry's first axis
          for d = 2, o[q].ndim do shape[d] = 1 end
          o[q] = hl.where(pb and hl.reshape(p, shape) or p, o[q], args[q])
        end
      end
      return o
    end)
    local cond_trace, cond_out
    if info.kind == "while" then
      cond_trace, cond_out = sub_trace(t, specs, function(args)
        local p, pb = condition(args)
        return {pb and hl.any(p) or p}
      end)
      cond_out = own(cond_trace, cond_out)
    end
    local r = record {kind = info.kind, name = info.name, trace = t, body = bt, body_out = own(bt, out), lo = info.lo,
                      hi = info.hi, ncarry = nc, inputs = inputs, cond = cond_trace, cond_out = cond_out}
    for k = nc + 1, #r do r[k] = swap12(r[k]) end   -- stacked outputs: the batch first
    info.replayed = {x = x, b = b, results = r}
    return r[n.result], true
  end
  -- A compiled loop is differentiated as a whole where it is recorded (differentiable_loop); a
  -- loop node met by autodiff any other way would lose its gradient, so that is an error.
  local function no_derivative(what)
    return function() fail("%s: internal: a compiled loop reached autodiff without its derivative", what) end
  end
  hl.rules.define("loop", {batch = batch_loop, vjp = no_derivative("grad"), jvp = no_derivative("jvp")})

  local function any_traced(leaves)
    for _, l in ipairs(leaves) do if not is_concrete(l) then return true end end
    return false
  end

  function hl.while_loop(cond_fn, body_fn, init)
    check_fn("while_loop", cond_fn, "cond_fn")
    check_fn("while_loop", body_fn, "body_fn")
    local leaves, def = as_leaves("while_loop", "the initial carry's", init)
    local t, differentiating, forward = loop_trace()
    if t and not differentiating and #leaves > 0 then return compiled_while(t, cond_fn, body_fn, init, leaves, def, forward) end
    local carry = tree.unflatten(def, leaves)
    while true do
      local p = cond_fn(carry)
      if not is_concrete(p) or any_traced(leaves) then
        if (tracing.differentiating or 0) > 0 then
          fail("while_loop: its number of steps depends on traced values, so reverse-mode autodiff (grad, vjp, " ..
               "jacrev, hessian) cannot go through it; use hl.fori_loop or hl.scan with a fixed number of steps " ..
               "(jvp and jacfwd can, inside hl.jit)")
        end
        fail("while_loop: its number of steps depends on traced values, which hl.vmap batches only inside hl.jit " ..
             "(and not inside jvp or jacfwd there); use hl.fori_loop or hl.scan with a fixed number of steps")
      end
      if not truth("while_loop", p) then return carry end
      local new = body_fn(carry)
      leaves = check_same("while_loop", "body_fn's result", "the initial carry", init, leaves, def, new)
      carry = tree.unflatten(def, leaves)
    end
  end

  local function static_int(op, what, v)
    -- a dynamic size (hl.jit's dynamic_axes) is the number it is in the trace being built: the
    -- traces at other sizes give the loop's bounds as functions of the sizes (hl_poly.c)
    if symdim.is_sym(v) then v = symdim.concrete(v) end
    if is_array(v) then
      if not is_concrete(v) then fail("%s: %s must be known when the function is traced (a number), not a traced array", op, what) end
      v = v:item()
    end
    if type(v) ~= "number" or v ~= math.floor(v) then fail("%s: %s must be an integer, got %s", op, what, tostring(v)) end
    return v
  end

  function hl.fori_loop(lo, hi, body_fn, init)
    local lo_size, hi_size = lo, hi
    lo, hi = static_int("fori_loop", "lo", lo), static_int("fori_loop", "hi", hi)
    check_fn("fori_loop", body_fn, "body_fn")
    local leaves, def = as_leaves("fori_loop", "the initial carry's", init)
    local t, differentiating, forward = loop_trace()
    if t and #leaves > 0 and differentiating and hi >= lo then
      return differentiable_fori(t, lo, hi, body_fn, init, leaves, def, lo_size, hi_size)
    end
    if t and #leaves > 0 and not differentiating then return compiled_fori(t, lo, hi, body_fn, init, leaves, def, forward) end
    local carry = tree.unflatten(def, leaves)
    local like = leaves[1]
    for i = lo, hi do
      local iv = like and hl.fill_like(like, i, {}, "int32") or hl.array(i, "int32")
      leaves = check_same("fori_loop", "body_fn's result", "the initial carry", init, leaves, def, body_fn(iv, carry))
      carry = tree.unflatten(def, leaves)
    end
    return carry
  end

  function hl.scan(f, init, xs)
    check_fn("scan", f, "f")
    local c_leaves, c_def = as_leaves("scan", "the initial carry's", init)
    local x_leaves, x_def = {}, nil
    if xs ~= nil then x_leaves, x_def = as_leaves("scan", "xs", xs) end
    local n
    for i, l in ipairs(x_leaves) do
      if l.ndim == 0 then fail("scan: xs leaf %s is 0-d; scan runs along the first axis", leaf_paths(xs)[i]) end
      if n and l.shape[1] ~= n then
        fail("scan: xs leaf %s has %d rows, but the first leaf has %d", leaf_paths(xs)[i], l.shape[1], n)
      end
      n = n or l.shape[1]
    end
    if not n then fail("scan: xs must hold at least one array to scan over") end
    local t, differentiating, forward = loop_trace()
    if t and #c_leaves > 0 and differentiating then
      return differentiable_scan(t, f, init, c_leaves, c_def, x_leaves, x_def, n)
    end
    if t and #c_leaves > 0 then return compiled_scan(t, f, init, c_leaves, c_def, x_leaves, x_def, n, forward) end
    local carry = tree.unflatten(c_def, c_leaves)
    if n == 0 then
      -- no steps: the carry as it is, and empty stacks shaped like f's output on a row of zeros
      local row = {}
      for k, l in ipairs(x_leaves) do
        local shape = l.shape
        table.remove(shape, 1)
        row[k] = hl.zeros(shape, l.dtype)
      end
      local _, y = f(carry, tree.unflatten(x_def, row))
      local y_leaves, y_def = as_leaves("scan", "f's output", y)
      for k, l in ipairs(y_leaves) do
        local shape = l.shape
        table.insert(shape, 1, 0)
        y_leaves[k] = hl.zeros(shape, l.dtype)
      end
      return carry, tree.unflatten(y_def, y_leaves)
    end
    local ys, y_def, y_tree = {}, nil, nil
    for i = 1, n do
      local x_i = {}
      for k, l in ipairs(x_leaves) do x_i[k] = l[i] end
      local new_carry, y = f(carry, tree.unflatten(x_def, x_i))
      c_leaves = check_same("scan", "f's carry", "the initial carry", init, c_leaves, c_def, new_carry)
      carry = tree.unflatten(c_def, c_leaves)
      if y_def == nil then
        y_tree = y
        ys[1], y_def = as_leaves("scan", "f's output", y)
      else
        ys[i] = check_same("scan", "f's output at step " .. i, "its output at step 1", y_tree, ys[1], y_def, y)
      end
    end
    -- stack the outputs along a new first axis
    local stacked = {}
    for k = 1, #ys[1] do
      local parts = {}
      for i = 1, n do parts[i] = hl.expand_dims(ys[i][k], 1) end
      stacked[k] = hl.concatenate(parts, 1)
    end
    return carry, tree.unflatten(y_def, stacked)
  end
end
