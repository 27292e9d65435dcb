-- hl.jacfwd, hl.jacrev and hl.hessian: one autodiff pass per basis vector, batched by hl.vmap,
-- on the recording machinery of ad.lua (handed over by init.lua).
return function(hl, core, ad)
  local tree = require "halua.tree"
  local util = require "halua.util"
  local is_array = core.is_array
  local unpack = unpack or table.unpack
  local fail, pack, type_str = util.fail, util.pack, util.type_str
  local record, gather, backward, forward = ad.record, ad.gather, ad.backward, ad.forward
  local var_nodes, node_in, plain_tree, check_argnums = ad.var_nodes, ad.node_in, ad.plain_tree, ad.check_argnums
  local is_float = util.is_float

  local stack_shape = util.concat   -- (outer, inner) -> the shape outer .. inner

  local function size_of(shape)
    local n = 1
    for _, s in ipairs(shape) do n = n * s end
    return n
  end

  -- jac[out leaf][arg k][arg leaf] assembled into out tree of (arg or {args}) trees
  local function assemble(out_def, jac, infos, single)
    local per_out = {}
    for o, per_arg in ipairs(jac) do
      local args = {}
      for k, info in ipairs(infos) do
        args[k] = info.def == "*" and per_arg[k][1] or tree.unflatten(info.def, per_arg[k])
      end
      per_out[o] = single and args[1] or args
    end
    return out_def == "*" and per_out[1] or tree.unflatten(out_def, per_out)
  end

  local function jacobian(op, f, argnums, reverse)
    local list, single = check_argnums(op, argnums)
    return function(...)
      local args = pack(...)
      local trace, owner, res, infos = record(op, f, args, list, "error")
      local out = res[1]
      local leaves, def = tree.flatten(out)
      local ok, result = pcall(function()
        local jac = {}
        local onodes = {}
        for o, l in ipairs(leaves) do
          if type(l) == "number" then l = hl.array(l) leaves[o] = l end
          if not is_array(l) then fail("%s: the function returned a %s; return arrays", op, type(l)) end
          if not is_float(l.dtype) then fail("%s: the function must return float arrays but returned %s", op, type_str(l)) end
          onodes[o] = node_in(trace, l) or false
          jac[o] = {}
          for k, info in ipairs(infos) do
            jac[o][k] = {}
            for j in ipairs(info.leaves) do jac[o][k][j] = false end
          end
        end
        local vars = var_nodes(trace, infos)
        -- one pass per basis vector, batched by vmap: the pass is traced once and replayed on
        -- all the seeds together (one pipeline under jit, however many elements)
        local function seeds(shape, dtype)
          local n = size_of(shape)
          local s = {n}
          for _, e in ipairs(shape) do s[#s + 1] = e end
          return hl.reshape(hl.eye(n):astype(dtype), s), n
        end
        if reverse then
          for o, l in ipairs(leaves) do
            local basis, n = seeds(l.shape, l.dtype)
            local rows = {}
            local function pass(seed)
              local g = gather(trace, infos, backward(trace, vars, {{onodes[o], seed}}))
              local flat = {}
              for k, info in ipairs(infos) do
                local gl = info.def == "*" and {g[k]} or tree.flatten(g[k])
                for j in ipairs(info.leaves) do flat[#flat + 1] = gl[j] end
              end
              return unpack(flat)
            end
            if onodes[o] and n == 1 then
              rows = {pass(hl.reshape(basis, l.shape))}   -- one seed (a scalar's gradient) needs no batch
            elseif onodes[o] and n > 0 then
              rows = {hl.vmap(pass)(basis)}
            end
            local m = 0
            for k, info in ipairs(infos) do
              for j, leaf in ipairs(info.leaves) do
                m = m + 1
                jac[o][k][j] = rows[m] and hl.reshape(rows[m], stack_shape(l.shape, leaf.shape)) or
                               hl.zeros(stack_shape(l.shape, leaf.shape), l.dtype)
              end
            end
          end
        else
          for k, info in ipairs(infos) do
            for j, leaf in ipairs(info.leaves) do
              local basis, n = seeds(leaf.shape, leaf.dtype)
              local var = node_in(trace, info.vars[j])
              local cols = {}
              local function pass(seed)
                local t = forward(trace, {[var] = seed}, onodes)
                local r = {}
                for o, l in ipairs(leaves) do r[o] = onodes[o] and t[onodes[o]] or hl.zeros_like(l) end
                return unpack(r, 1, #leaves)
              end
              if n == 1 then
                cols = {pass(hl.reshape(basis, leaf.shape))}
                for o, c in ipairs(cols) do cols[o] = hl.expand_dims(c, 1) end
              elseif n > 0 then
                cols = {hl.vmap(pass)(basis)}
              end
              for o, l in ipairs(leaves) do
                -- (n, out...) -> (out..., n) -> out .. leaf
                local c = cols[o]
                if c then
                  local perm = {}
                  for d = 2, c.ndim do perm[#perm + 1] = d end
                  perm[#perm + 1] = 1
                  jac[o][k][j] = hl.reshape(hl.transpose(c, perm), stack_shape(l.shape, leaf.shape))
                else
                  jac[o][k][j] = hl.zeros(stack_shape(l.shape, leaf.shape), l.dtype)
                end
              end
            end
          end
        end
        return assemble(def, jac, infos, single)
      end)
      if not ok then
        if owner then core.trace_close(trace) end
        error(result, 0)
      end
      if owner then
        result = plain_tree(result)
        core.trace_close(trace)
      end
      return result
    end
  end

  function hl.jacrev(f, argnums) return jacobian("jacrev", f, argnums, true) end
  function hl.jacfwd(f, argnums) return jacobian("jacfwd", f, argnums, false) end
  function hl.hessian(f, argnums) return hl.jacfwd(hl.jacrev(f, argnums), argnums) end

end
