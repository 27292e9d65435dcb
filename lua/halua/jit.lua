-- hl.jit, hl.trace, hl.export and the compile cache's API: a function traced once per argument
-- signature into a program (one pipeline), cached, and called through a fast path.
return function(hl, core, shared)
  local tree = require "halua.tree"
  local util = require "halua.util"
  local tracing = require "halua.trace"   -- the jit traces being built, and the open autodiff tape
  local symdim = require "halua.symdim"   -- dynamic_axes: the sizes a polymorphic trace shows
  local fail, pack = util.fail, util.pack
  local is_array = core.is_array
  local unpack = unpack or table.unpack
  local device_id = shared.device_id
  local CPU, CUDA = 0, 1


  local function leaf_sig(v, i)
    local t = type(v)
    if t == "userdata" and core.usable(v, "jit") then
      local dtype, shape = core.info(v)
      return dtype .. "@" .. core.device_of(v) .. "[" .. table.concat(shape, ",") .. "]"
    elseif t == "number" then
      return string.format("#%.17g", v)
    elseif t == "boolean" or t == "string" or t == "nil" then
      return "#" .. tostring(v)
    end
    fail("jit: argument %d holds a %s leaf; pass arrays or numbers, or mark it static with static_argnums", i, t)
  end

  local function static_sig(v)
    if type(v) == "table" then
      local leaves, def = tree.flatten(v)
      local parts = {def}
      for _, l in ipairs(leaves) do parts[#parts + 1] = type(l) == "number" and string.format("%.17g", l) or tostring(l) end
      return table.concat(parts, "|")
    end
    return type(v) == "number" and string.format("%.17g", v) or tostring(v)
  end


  local jit_mt = {}
  jit_mt.__index = jit_mt

  -- signature, the flat list of traced arrays, and per-argument tree information; `array_sig(k)`,
  -- when given, is array argument k's part of the signature (dynamic_axes: sizes named by symbol)
  local function analyse(self, args, n, array_sig)
    if self.max_static > n then
      fail("jit: static_argnums names argument %d, but %s was called with %d argument%s", self.max_static, self.name, n,
           n == 1 and "" or "s")
    end
    local parts, arrays, info = {}, {}, {}
    for i = 1, n do
      local a = args[i]
      if self.static[i] then
        parts[i] = "S" .. static_sig(a)
        info[i] = false
      elseif is_array(a) then
        arrays[#arrays + 1] = a
        parts[i] = array_sig and array_sig(#arrays) or leaf_sig(a, i)
        info[i] = true
      elseif type(a) == "table" then
        local leaves, def = tree.flatten(a)
        local lp = {def}
        for _, l in ipairs(leaves) do
          if is_array(l) then arrays[#arrays + 1] = l end
          lp[#lp + 1] = array_sig and is_array(l) and array_sig(#arrays) or leaf_sig(l, i)
        end
        parts[i] = table.concat(lp, ";")
        info[i] = {def = def, leaves = leaves}
      else
        parts[i] = leaf_sig(a, i)
        info[i] = false
      end
    end
    return n .. "|" .. table.concat(parts, "|"), arrays, info
  end

  local log_compiles = (os.getenv("HALUA_LOG_COMPILES") or "0") ~= "0" and os.getenv("HALUA_LOG_COMPILES") ~= ""

  -- Traces self.f on tracers standing for the arrays of args (on `device`): the trace, its traced
  -- results in order, and where each sits in the results (slots), with the results' trees.
  -- `resize(k, shape)`, when given, gives the shape to trace array argument k at (dynamic_axes).
  local function trace_call(self, args, n, info, device, resize, before)
    local trace = core.trace_new()
    local targs = {}
    local k = 0
    local function arg(a)
      local dtype, shape = core.info(a)
      k = k + 1
      if resize then shape = resize(k, shape) end
      return core.trace_arg(trace, dtype, shape, device or core.device_of(a))
    end
    for i = 1, n do
      local a = args[i]
      if info[i] == true then
        targs[i] = arg(a)
      elseif type(info[i]) == "table" then
        local leaves = {}
        for j, l in ipairs(info[i].leaves) do
          if is_array(l) then
            leaves[j] = arg(l)
          else
            leaves[j] = l
          end
        end
        targs[i] = tree.unflatten(info[i].def, leaves)
      else
        targs[i] = a
      end
    end
    -- autodiff records onto the trace being built (ad.lua)
    local stack = tracing.stack
    stack[#stack + 1] = trace
    if before then before(trace, targs) end
    local ok, results = pcall(function() return pack(self.f(unpack(targs, 1, n))) end)
    stack[#stack] = nil
    if not ok then
      core.trace_close(trace)
      error(results, 0)
    end
    -- the outputs: tracers of this trace become pipeline outputs; anything else is returned as is
    local out_leaves, out_defs = {}, {}
    local traced, slots = {}, {}
    for r = 1, results.n do
      local leaves, def = tree.flatten(results[r])
      out_defs[r] = def
      out_leaves[r] = leaves
      for j, l in ipairs(leaves) do
        if core.is_tracer(l) then
          traced[#traced + 1] = l
          slots[#slots + 1] = {r, j}
        end
      end
    end
    return trace, traced, {nres = results.n, defs = out_defs, consts = out_leaves, slots = slots}
  end

  -- `traced_now`: a trace of this call already made ({trace, traced, entry}: dynamic_axes' check)
  local function build(self, args, n, info, sig, traced_now)
    if log_compiles and not traced_now then
      local others = 0
      for _ in pairs(self.cache) do others = others + 1 end
      io.stderr:write(string.format("halua: tracing %s: %s (signature %s)\n", self.name,
        others == 0 and "first call" or ("a new argument signature; " .. others .. " other(s) cached"), sig))
    end
    local trace, traced, entry
    if traced_now then trace, traced, entry = traced_now.trace, traced_now.traced, traced_now.entry
    else trace, traced, entry = trace_call(self, args, n, info, self.device) end
    entry.text = core.trace_text(trace, traced)
    -- results that do not depend on the arguments are returned as they are: nothing to compile
    if #traced > 0 then entry.program = core.program_build(trace, traced, self.name, self.schedule) end
    core.trace_close(trace)
    -- constants must not keep tracers alive
    for _, s in ipairs(entry.slots) do entry.consts[s[1]][s[2]] = false end
    self.cache[sig] = entry
    return entry
  end

  -- ---- dynamic_axes: one program for every size of the named axes (lua/halua/symdim.lua) ----

  -- The dynamic axes of this call: for each array argument k (in the order analyse lists them)
  -- its dynamic axes (0-based) and their symbols, grouped by size (equal sizes are one symbol:
  -- the program may rely on them being equal, and the signature says they are). nil when this
  -- call cannot be polymorphic (an empty dynamic axis, too many different sizes), with why.
  local symbol_names = {"b", "c", "d", "e"}
  local function poly_plan(self, args, n, info)
    local dyn, sizes, origin, params, axes, by_size = {}, {}, {}, {}, {}, {}
    local leaf_sigs, static_extents = {}, {}
    local k = 0
    local function leaf(a, i, leafno)
      k = k + 1
      local _, shape = core.info(a)
      local want = self.dynamic_axes[i] or self.dynamic_axes.all or {}
      local d = {}
      for _, ax in ipairs(want) do
        if ax > #shape then
          fail("jit: dynamic_axes names axis %d of argument %d%s, which has %d ax%s", ax, i,
               leafno and (" (leaf " .. leafno .. ")") or "", #shape, #shape == 1 and "is" or "es")
        end
        local size = shape[ax]
        if size == 0 then return "an empty dynamic axis (size 0) is specialised" end
        local j = by_size[size]
        if not j then
          j = #sizes + 1
          if j > symdim.max_symbols then return "more than " .. symdim.max_symbols .. " different dynamic sizes" end
          by_size[size], sizes[j] = j, size
          params[j], axes[j] = k - 1, ax - 1
          local pname = type(self.f) == "function" and debug.getlocal(self.f, i) or nil
          origin[j] = string.format("axis %d of %s%s", ax, pname or ("argument " .. i), leafno and (" (leaf " .. leafno .. ")") or "")
        end
        d[ax] = j
      end
      dyn[k] = d
      local dims = {}
      for a = 1, #shape do
        dims[a] = d[a] and symbol_names[d[a]] or tostring(shape[a])
        if not d[a] then static_extents[shape[a]] = true end
      end
      leaf_sigs[k] = core.info(a) .. "@" .. core.device_of(a) .. "[" .. table.concat(dims, ",") .. "]"
    end
    for i = 1, n do
      if info[i] == true then
        local why = leaf(args[i], i)
        if why then return nil, why end
      elseif type(info[i]) == "table" then
        for j, l in ipairs(info[i].leaves) do
          if is_array(l) then
            local why = leaf(l, i, j)
            if why then return nil, why end
          end
        end
      end
    end
    if #sizes == 0 then return nil, "no array argument has the named axes" end
    return {dyn = dyn, sizes = sizes, origin = origin, params = params, axes = axes, names = {unpack(symbol_names, 1, #sizes)},
            leaf_sigs = leaf_sigs, static_extents = static_extents}
  end

  local function say_poly(self, what)
    if log_compiles then io.stderr:write(string.format("halua: %s: %s\n", self.name, what)) end
  end

  -- Whether two traces of f gave results of one structure with the same values where they are
  -- not traced; a dynamic size among them is an error (a size exists only while f is traced).
  local function same_results(self, a, b)
    if a.nres ~= b.nres or #a.slots ~= #b.slots then return false end
    for r = 1, a.nres do
      if a.defs[r] ~= b.defs[r] then return false end
      for j, l in ipairs(a.consts[r]) do
        local m = b.consts[r][j]
        if symdim.is_sym(l) or symdim.is_sym(m) then
          fail("jit: %s returns a dynamic size (result %d); return an array (hl.array of it is not a size either), " ..
               "or leave the axis out of dynamic_axes", self.name, r)
        end
        if not (core.is_tracer(l) or core.is_tracer(m) or l == m) then return false end
      end
    end
    return true
  end

  -- What a polymorphic trace does before f runs (trace_call's `before`): the sizes f sees
  -- (symdim.begin: made-up ones for `at`, or the call's own with `check`), and a tracer of the
  -- trace for the constants made from sizes.
  local function symbolic_start(plan, at, n, info, check)
    return function(trace, targs)
      symdim.begin(plan.names, plan.origin, at, core.trace_id(trace), plan.static_extents, check)
      for i = 1, n do
        local v = targs[i]
        local first = core.is_tracer(v) and v or (type(v) == "table" and info[i] and tree.leaves(v)[1]) or nil
        if first and core.is_tracer(first) then
          symdim.set_anchor(first)
          break
        end
      end
    end
  end

  -- Traces f once per set of made-up sizes (base, each symbol moved, all moved) and has the
  -- engine fit one program to them: the entry, or false and why when f is not polymorphic here.
  local function build_poly(self, args, n, info, plan)
    local nsym = #plan.sizes
    local which = {0}
    for j = 1, nsym do which[#which + 1] = j end
    which[#which + 1] = "check"
    local traces, traced_lists, sizes, entries, guards, seen_guards, creations = {}, {}, {}, {}, {}, {}, nil
    local ok, err = pcall(function()
      for t, at in ipairs(which) do
        local markers = {}
        for j = 1, nsym do markers[j] = symdim.marker(j, at) end
        local function resize(k, shape)
          local d = plan.dyn[k]
          for a in pairs(d) do shape[a] = markers[d[a]] end
          return shape
        end
        local tok, trace, traced, entry = pcall(trace_call, self, args, n, info, self.device, resize,
                                                symbolic_start(plan, at, n, info))
        local g, made = symdim.finish()
        if not tok then error(trace, 0) end
        if t == 1 then creations = made end
        traces[t], traced_lists[t], sizes[t], entries[t] = trace, traced, markers, entry
        -- (every trace's: a size that one trace reads as a number, another as a size)
        for _, gd in ipairs(g) do
          local a = {}
          for j = 1, nsym do a[j] = gd.a[j] or 0 end
          local key = table.concat({gd.c, gd.k, gd.r, unpack(a)}, ",")
          if not seen_guards[key] then seen_guards[key], guards[#guards + 1] = true, gd end
        end
      end
    end)
    local function close_all() for _, tr in ipairs(traces) do core.trace_close(tr) end end
    if not ok then
      close_all()
      -- (an error a polymorphic trace meets is the function's own: said in terms of its sizes)
      error(symdim.explain(err, plan.names, plan.origin), 0)
    end
    -- the results must have one structure, and the same values where they are not traced
    local e0 = entries[1]
    for t = 2, #entries do
      local sok, same = pcall(same_results, self, e0, entries[t])
      if not (sok and same) then
        close_all()
        if not sok then error(same, 0) end
        return false, "its results differ between sizes (a number computed from a size is returned)"
      end
    end
    local program, why
    if #traced_lists[1] > 0 then
      local tok, p, w = pcall(core.program_build_symbolic, traces, traced_lists, sizes, plan.params, plan.axes, self.name)
      if not tok then
        close_all()
        error(p, 0)
      end
      program, why = p, w
    else
      why = "nothing to compute"
    end
    e0.text = symdim.rename(core.trace_text(traces[1], traced_lists[1]), plan.names)
    close_all()
    if not program then return false, why end
    e0.program = program
    e0.guards = guards
    e0.creations = creations
    e0.polymorphic = plan.origin
    for _, s in ipairs(e0.slots) do e0.consts[s[1]][s[2]] = false end
    return e0
  end

  -- The entry for a call of a function with dynamic_axes (nil: trace it for these sizes), and
  -- the reason when it has to be specialised.
  local function poly_entry(self, args, n, info, arrays)
    if self.schedule then return nil, "schedule = \"auto\" (Halide's autoscheduler) plans for known sizes" end
    local plan, why = poly_plan(self, args, n, info)
    if not plan then return nil, why end
    local key = analyse(self, args, n, function(k) return plan.leaf_sigs[k] end)
    local entry = self.poly_cache[key]
    if entry == nil then
      local desc = {}
      for j = 1, #plan.names do desc[j] = plan.names[j] .. " = " .. plan.origin[j] end
      if log_compiles then
        io.stderr:write(string.format("halua: tracing %s polymorphic in %s (signature %s)\n", self.name, table.concat(desc, ", "), key))
      end
      local w
      entry, w = build_poly(self, args, n, info, plan)
      self.poly_cache[key] = entry
      if not entry then
        self.poly_why[key] = w
        say_poly(self, "not polymorphic: " .. w .. "; compiled for each size instead")
      end
    end
    if not entry then return nil, self.poly_why[key] end
    if not symdim.guards_hold(entry.guards, plan.sizes) then
      return nil, "these sizes break a division the function's sizes rely on"
    end
    local serves, w = core.program_serves(entry.program, unpack(arrays))
    if not serves then return nil, "the program does not serve these sizes: " .. w end
    -- The function traced once more at this call's own sizes (no compile): halua's functions may
    -- check or clamp a size (an index against an axis' length, the longer of two lengths), which
    -- the traces at made-up sizes cannot see; the polymorphic program serves this call only if
    -- this trace is that program at these sizes, node for node and number for number. Otherwise
    -- this trace is compiled for these sizes (and an error it met is the call's own).
    local tok, trace, traced, e = pcall(trace_call, self, args, n, info, self.device, nil,
                                        symbolic_start(plan, "real", n, info, {sizes = plan.sizes, made = entry.creations}))
    symdim.finish()
    if not tok then error(trace, 0) end
    local matches, mwhy = false, "its results differ at these sizes"
    local ok, same = pcall(same_results, self, entry, e)
    if ok and same then ok, matches, mwhy = pcall(core.program_matches, entry.program, trace, traced, unpack(arrays)) end
    if not ok then
      core.trace_close(trace)
      error(matches or same, 0)
    end
    if not matches then return nil, mwhy, {trace = trace, traced = traced, entry = e} end
    core.trace_close(trace)
    return entry
  end

  local function run(entry, arrays)
    local outs = entry.program and {core.program_run(entry.program, unpack(arrays))} or {}
    local results = {}
    for r = 1, entry.nres do
      local leaves = {}
      for j, l in ipairs(entry.consts[r]) do leaves[j] = l end
      results[r] = leaves
    end
    for k, s in ipairs(entry.slots) do results[s[1]][s[2]] = outs[k] end
    for r = 1, entry.nres do
      local def = entry.defs[r]
      results[r] = def == "*" and results[r][1] or tree.unflatten(def, results[r])
    end
    return unpack(results, 1, entry.nres)
  end

  local call_memo_run, call_memo_add, call_memo_match = core.call_memo_run, core.call_memo_add, core.call_memo_match

  -- The pytree path: a jitted function keeps the structure of its last call's table arguments
  -- (their defs) and a call memo of the array leaves' signatures under that structure. A call of
  -- the same structure takes its leaves by tree.match, without flattening or building a
  -- signature, and the memo finds its entry.

  -- After a general call with table arguments: the structure's defs (kept while the structure
  -- stays; a new one starts afresh) and the leaves' signature in the memo. Only when
  -- every leaf is an array (numbers and other leaves are part of the trace, not arguments).
  local function remember_tree(self, n, info, entry, arrays)
    local defs, tables = {}, false
    for i = 1, n do
      if type(info[i]) == "table" then
        defs[i], tables = info[i].def, true
        for _, l in ipairs(info[i].leaves) do
          if not is_array(l) then return end
        end
      elseif info[i] == true then
        defs[i] = "*"
      else
        return
      end
    end
    if not tables then return end   -- (plain arrays: the call memo of __call has it)
    local tm = self.tree_memo
    local same = tm and #tm.defs == n
    for i = 1, n do same = same and tm.defs[i] == defs[i] end
    if not same then
      tm = {defs = defs, memo = core.call_memo(), entries = {}}   -- (defs: one per argument)
      self.tree_memo = tm
    end
    local slot = call_memo_add(tm.memo, entry.program, unpack(arrays))
    if slot then tm.entries[slot] = entry end
  end

  -- jit(f, {device = ...}): array arguments move to that device first
  local function moved(self, ...)
    local n = select("#", ...)
    local args = {...}
    for i = 1, n do
      local a = args[i]
      if is_array(a) and not core.is_tracer(a) and core.device_of(a) ~= self.device then
        args[i] = core.to_device(a, self.device)
      elseif type(a) == "table" and not self.static[i] then
        args[i] = tree.map(function(l)
          if is_array(l) and not core.is_tracer(l) and core.device_of(l) ~= self.device then return core.to_device(l, self.device) end
          return l
        end, a)
      end
    end
    return unpack(args, 1, n)
  end

  -- in the shell a jitted function shows its name and how many signatures it has traced
  function jit_mt:__tostring()
    local n, programs, poly, served = 0, {}, 0, 0
    for _, e in pairs(self.cache) do
      n = n + 1
      if e.polymorphic then
        served = served + 1
        if not programs[e] then programs[e], poly = true, poly + 1 end
      end
    end
    local s = string.format("<jit function %s: %d signature%s traced", (self.name:gsub("^jit ", "")), n, n == 1 and "" or "s")
    if poly > 0 then s = s .. string.format(", %d of them by %d polymorphic program%s", served, poly, poly == 1 and "" or "s") end
    return s .. ">"
  end

  function jit_mt:__call(...)
    -- the fast path: every argument an array whose dtype, device and shape match a recent plain
    -- call (its entry's results all arrays): that program runs at once, in C (core.call_memo_run);
    -- anything else goes on to self:call. Under an autodiff tape (hl.grad outside jit) the
    -- function runs op by op, recorded, instead.
    if not tracing.tape then return call_memo_run(self.memo, self.slow, ...) end
    return self.slow(...)
  end

  function jit_mt:call(...)
    -- under an autodiff tape (hl.grad outside jit) the function runs op by op, recorded
    if tracing.tape then return self.f(...) end
    local n = select("#", ...)
    local args = {...}
    local tm = self.tree_memo
    if tm and #tm.defs == n then
      local arrays, same = {}, true
      for i = 1, n do
        if not tree.match(tm.defs[i], args[i], arrays) then   -- (an array argument's def is "*")
          same = false
          break
        end
      end
      -- (live tracers and non-array leaves match no slot: they take the general path below)
      local slot = same and call_memo_match(tm.memo, unpack(arrays))
      if slot then return run(tm.entries[slot], arrays) end
    end
    for i = 1, n do
      -- called while tracing an enclosing function: inline (a leaked tracer, of a trace that has
      -- ended, is jit's error)
      if core.is_tracer(args[i]) and core.usable(args[i], "jit") then return self.f(...) end
      if type(args[i]) == "table" and not self.static[i] then
        for _, l in ipairs(tree.leaves(args[i])) do
          if core.is_tracer(l) and core.usable(l, "jit") then return self.f(...) end
        end
      end
    end
    local sig, arrays, info = analyse(self, args, n)
    local entry = self.cache[sig]
    if not entry and self.dynamic_axes then
      local why, traced_now
      entry, why, traced_now = poly_entry(self, args, n, info, arrays)
      if entry then
        self.cache[sig] = entry
      elseif why then
        say_poly(self, "this call is specialised: " .. why)
      end
      -- (a trace at these sizes that the polymorphic program did not match is compiled as it is)
      if traced_now then entry = build(self, args, n, info, sig, traced_now) end
    end
    if not entry then
      -- a program takes at most core.max_program_arrays arrays (runtime/hl_eval.h): said now,
      -- not after a compile that may take minutes
      if #arrays > core.max_program_arrays then
        fail("jit: %s is called with %d arrays but a jitted function takes at most %d; pass fewer, larger arrays " ..
             "(e.g. stack each layer's parameters along a leading axis)", self.name, #arrays, core.max_program_arrays)
      end
      entry = build(self, args, n, info, sig)
    end
    if entry.plain == nil then
      -- every result a traced array: the fast path may run it
      local plain = not self.has_static and #entry.slots == entry.nres and entry.program ~= nil
      for r = 1, entry.nres do plain = plain and entry.defs[r] == "*" end
      entry.plain = plain
    end
    -- (call_memo_add remembers it only when every argument is an array: nothing else to check)
    if entry.plain then call_memo_add(self.memo, entry.program, ...) end
    if entry.program and not self.has_static then remember_tree(self, n, info, entry, arrays) end
    return run(entry, arrays)
  end

  local lowered_mt = {}
  lowered_mt.__index = lowered_mt
  function lowered_mt:ir() return self.entry.text end
  local function program_of(self)
    if not self.entry.program then fail("lower: this function's results do not depend on its arguments: there is no pipeline") end
    return self.entry.program
  end
  function lowered_mt:stmt() return core.program_stmt(program_of(self)) end
  function lowered_mt:compile_ms() return self.entry.program and core.program_compile_ms(self.entry.program) or 0 end
  function lowered_mt:ptx() return core.program_ptx(program_of(self)) end
  function lowered_mt:loop_ptx() return core.program_loop_ptx(program_of(self)) end
  function lowered_mt:asm() return core.program_asm(program_of(self)) end
  lowered_mt.__tostring = function(self) return self.entry.text end

  function jit_mt:lower(...)
    local n = select("#", ...)
    local args = {...}
    local sig, arrays, info = analyse(self, args, n)
    local entry = self.cache[sig] or (self.dynamic_axes and poly_entry(self, args, n, info, arrays)) or build(self, args, n, info, sig)
    return setmetatable({entry = entry}, lowered_mt)
  end

  function hl.jit(f, opts)
    if type(f) ~= "function" and not (type(f) == "table" and getmetatable(f) and getmetatable(f).__call) then
      fail("jit: expected a function, got %s", type(f))
    end
    opts = util.options("jit", opts, {"static_argnums", "donate_argnums", "device", "schedule", "name", "dynamic_axes"},
                        "{static_argnums = {2}}")
    local function argnums(key)
      local list, out = opts[key], {}
      if type(list) == "number" then list = {list} end
      if list ~= nil and type(list) ~= "table" then fail("jit: %s must hold 1-based argument numbers, got a %s", key, type(list)) end
      for _, i in ipairs(list or {}) do
        if type(i) ~= "number" or i < 1 or i ~= math.floor(i) then fail("jit: %s must hold 1-based argument numbers", key) end
        out[i] = true
      end
      return out
    end
    local static = argnums("static_argnums")
    -- donate_argnums: accepted as JAX takes it; halua's results always get memory of their own
    -- (an input is never overwritten), so donating only says the caller will not use the array again
    argnums("donate_argnums")
    local max_static = 0
    for i in pairs(static) do max_static = math.max(max_static, i) end
    if opts.name ~= nil and type(opts.name) ~= "string" then fail("jit: name must be a string, got a %s", type(opts.name)) end
    local device
    if opts.device ~= nil then
      -- checked when the function runs: lowering (and PTX checks) need no GPU
      if opts.device == "cpu" then device = CPU
      elseif type(opts.device) == "string" and (opts.device == "cuda" or opts.device == "cuda:1") then device = CUDA
      else fail("jit: unknown device %s (use \"cpu\" or \"cuda\")", tostring(opts.device)) end
    end
    -- schedule = "auto": Halide's Mullapudi2016 autoscheduler instead of halua's own (CPU only)
    if opts.schedule ~= nil and opts.schedule ~= "default" and opts.schedule ~= "auto" then
      fail("jit: schedule must be \"default\" or \"auto\" (Halide's Mullapudi2016 autoscheduler), got %s", tostring(opts.schedule))
    end
    if opts.schedule == "auto" and device == CUDA then
      fail("jit: schedule \"auto\" schedules CPU pipelines (Mullapudi2016); leave it out for cuda")
    end
    -- dynamic_axes = {1}: axis 1 of every array argument; {{1}, {}, {1, 2}}: per argument
    local dynamic_axes
    if opts.dynamic_axes ~= nil then
      local d = opts.dynamic_axes
      local function axes_list(list, what)
        if type(list) == "number" then list = {list} end
        if type(list) ~= "table" then fail("jit: dynamic_axes%s must hold 1-based axis numbers, got a %s", what, type(list)) end
        for _, a in ipairs(list) do
          if type(a) ~= "number" or a < 1 or a ~= math.floor(a) then
            fail("jit: dynamic_axes%s must hold 1-based axis numbers, got %s", what,
                 type(a) == "number" and tostring(a) or ("a " .. type(a)))
          end
        end
        return list
      end
      if type(d) ~= "table" then fail("jit: dynamic_axes must be a list of axes such as {1}, or one list per argument such as {{1}, {}}, got a %s", type(d)) end
      local tables, numbers = 0, 0
      for _, v in pairs(d) do
        if type(v) == "table" then tables = tables + 1 else numbers = numbers + 1 end
      end
      if tables > 0 and numbers > 0 then
        fail("jit: dynamic_axes mixes axis numbers and per-argument lists; give {1} (every argument) or {{1}, {}, {2}} (one list per argument)")
      end
      dynamic_axes = {}
      if tables > 0 then
        for i, v in pairs(d) do
          if type(i) ~= "number" then fail("jit: dynamic_axes must be a list, got key %s", tostring(i)) end
          dynamic_axes[i] = axes_list(v, " of argument " .. i)
          if static[i] and #dynamic_axes[i] > 0 then fail("jit: dynamic_axes names axes of argument %d, which is static", i) end
        end
      else
        dynamic_axes.all = axes_list(d, "")
      end
    end
    local info = type(f) == "function" and debug.getinfo(f, "S") or nil
    local name = opts.name or (info and info.short_src and ("jit " .. info.short_src .. ":" .. (info.linedefined or 0))) or "jit"
    local self = setmetatable({f = f, static = static, has_static = next(static) ~= nil, max_static = max_static, cache = {}, name = name,
                               device = device, schedule = opts.schedule == "auto" and "auto" or nil,
                               dynamic_axes = dynamic_axes, poly_cache = {}, poly_why = {}}, jit_mt)
    -- the call memo (see __call), and the way on for calls it does not know
    self.memo = core.call_memo()
    local function general(...) return self:call(...) end
    self.slow = function(...)
      if self.device and not self.device_checked then
        device_id(self.device == CPU and "cpu" or "cuda", "jit")   -- the device must exist to run
        self.device_checked = true
      end
      -- arguments moved to the function's device may match the memo now
      if self.device and not tracing.tape then return call_memo_run(self.memo, general, moved(self, ...)) end
      if self.device then return self:call(moved(self, ...)) end
      return self:call(...)
    end
    return self
  end

  -- hl.export(f, args, dir [, name]): f for the shapes and dtypes of args as a standalone C library
  -- (engine/runtime/hl_export.h); the default name is dir's last component as a C identifier
  function hl.export(f, args, dir, name)
    local jf
    if getmetatable(f) == jit_mt then jf = f
    elseif type(f) == "function" or (type(f) == "table" and getmetatable(f) and getmetatable(f).__call) then jf = hl.jit(f)
    else fail("export: expected a function or a jitted function, got %s", type(f)) end
    if type(args) ~= "table" or is_array(args) then
      fail("export: args must be a list of the function's arguments, such as {x} or {params, x}, got %s",
           is_array(args) and "an array" or type(args))
    end
    if type(dir) ~= "string" or dir == "" then fail("export: dir must be a directory path, got %s", type(dir)) end
    if name == nil then
      name = dir:gsub("/+$", ""):match("[^/]*$"):gsub("[^%w_]", "_")
      if name == "" then name = "halua_export" end
      if name:match("^%d") then name = "_" .. name end
    elseif type(name) ~= "string" then
      fail("export: name must be a string, got %s", type(name))
    end
    if jf.device == CUDA then fail("export: %s was jitted for cuda; exported libraries run on the CPU", jf.name) end
    local n = table.maxn(args)
    local _, _, info = analyse(jf, args, n)
    local trace, traced, entry = trace_call(jf, args, n, info, CPU)
    local ok, err = pcall(function()
      for _, s in ipairs(entry.slots) do entry.consts[s[1]][s[2]] = true end
      for r = 1, entry.nres do
        for j, l in ipairs(entry.consts[r]) do
          if l ~= true then
            fail("export: result %d%s does not depend on the arguments (a %s); every output of an exported library " ..
                 "is computed from its inputs", r, #entry.consts[r] > 1 and (" (leaf " .. j .. ")") or "",
                 is_array(l) and "constant array" or type(l))
          end
        end
      end
      if #traced == 0 then fail("export: %s returns nothing to compute", jf.name) end
      core.trace_export(trace, traced, dir, name)
    end)
    core.trace_close(trace)
    if not ok then error(err, 0) end
  end

  local trace_mt = {__tostring = function(self) return self.text end}
  function hl.trace(f, ...)
    local jf = getmetatable(f) == jit_mt and f or hl.jit(f)
    local lowered = jf:lower(...)
    return setmetatable({text = lowered:ir()}, trace_mt)
  end

  -- a table, as docs/api.md says; its metatable only makes it print readably
  local cache_info_mt = {__tostring = function(t)
    return string.format("{entries = %d, hits = %d, misses = %d, compile_ms = %.1f, disk_hits = %d, disk_misses = %d, " ..
                         "disk_bytes = %d, disk_load_ms = %.1f, disk_dir = %s, mem_bytes = %d, mem_limit = %d, evictions = %d}",
                         t.entries, t.hits, t.misses, t.compile_ms, t.disk_hits, t.disk_misses, t.disk_bytes, t.disk_load_ms,
                         t.disk_dir and string.format("%q", t.disk_dir) or "nil", t.mem_bytes, t.mem_limit, t.evictions)
  end}
  function hl.cache_info() return setmetatable(core.cache_info(), cache_info_mt) end
  function hl.cache_clear(opts)
    opts = util.options("cache_clear", opts, {"disk"}, "{disk = true}")
    return core.cache_clear(opts.disk == true)
  end
end
