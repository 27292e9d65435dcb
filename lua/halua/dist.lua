-- hl.dist: computation over the processes of an MPI job (Open MPI, started by mpirun).
--
-- Ranks are 1-based like every index in halua: hl.dist.rank() is MPI's rank + 1. The collectives
-- are primitives (engine/core/hl_prims.def, engine/host/hl_dist.c): eagerly they run at once,
-- inside hl.jit they are extern stages of the compiled pipeline, and they have derivative and
-- batching rules (lua/halua/rules.lua). The bytes travel through halua_dist, a C module linked to
-- Open MPI (engine/dist/hl_mpi.c) that this file loads on first use, so a process that never
-- uses hl.dist loads no MPI library. A process that mpirun did not start is a job of one rank.
--
-- Every rank must make the same collective calls in the same order with the same dtypes and
-- shapes; each call checks that first, and a mismatch is an error on every rank.
return function(hl, core, shared)
  local util = require "halua.util"
  local tree = require "halua.tree"
  local fail = util.fail
  local dist = {}

  local mod, rank0, size, via_mpi   -- halua_dist, this rank (0-based), the job's size

  local function start()
    if mod then return end
    local ok, m = pcall(require, "halua_dist")
    if not ok then
      fail("dist: hl.dist needs Open MPI, which this build of halua lacks (install Debian's openmpi-bin and " ..
           "libopenmpi-dev, then rebuild: scripts/setup)%s",
           tostring(m):find("module 'halua_dist' not found", 1, true) and "" or " (loading it said: " .. tostring(m) .. ")")
    end
    rank0, size, via_mpi = m.init()
    core.dist_set_transport(m.transport())
    mod = m
  end

  function dist.init()
    start()
    return rank0 + 1, size
  end
  function dist.rank() start() return rank0 + 1 end
  function dist.size() start() return size end
  function dist.barrier() start() mod.barrier() end
  -- started() -> whether hl.dist has started, this rank, the job's size (starts nothing)
  function dist.started()
    if not mod then return false, 1, 1 end
    return true, rank0 + 1, size
  end
  -- whether this process talks MPI (false: a job of one rank, no mpirun)
  function dist.mpi() start() return via_mpi end
  -- ends the whole job: message to stderr, then MPI_Abort (scripts/halua calls it on an error)
  function dist.abort(message, code)
    start()
    mod.abort(message and tostring(message) or nil, code or 1)
  end

  local function operand(x, op)
    start()
    return shared.as_array(x, op, 1)
  end

  local function axis_of(x, axis, op, what)
    what = what or "axis"
    if type(axis) ~= "number" or axis ~= math.floor(axis) then
      fail("%s: %s must be an integer, got %s", op, what, tostring(axis))
    end
    local nd = x.ndim
    local a = axis < 0 and axis + nd + 1 or axis
    if a < 1 or a > nd then fail("%s: %s %d out of range for shape %s", op, what, axis, util.shape_str(x.shape)) end
    return a - 1
  end

  local function rank_of(r, op, what)
    if type(r) ~= "number" or r ~= math.floor(r) or r < 1 or r > size then
      fail("%s: %s must be a rank 1..%d, got %s", op, what, size, tostring(r))
    end
    return r - 1
  end

  -- the collectives on one array; psum, pmean, pmax, pmin and broadcast also take a pytree
  local function each(op, f)
    return function(x, ...)
      start()
      if type(x) == "table" and not core.usable(x, op) then
        local extra = util.pack(...)
        return tree.map(function(leaf) return f(leaf, unpack(extra, 1, extra.n)) end, x)
      end
      return f(x, ...)
    end
  end

  -- (bools are counted in int32, as hl.sum counts them)
  dist.psum = each("dist.psum", function(x)
    x = operand(x, "dist.psum")
    return core.dist("dist.psum", x.dtype == "bool" and x:astype("int32") or x, 0, -1, size)
  end)
  dist.pmax = each("dist.pmax", function(x) return core.dist("dist.pmax", operand(x, "dist.pmax"), 0, -1, size) end)
  dist.pmin = each("dist.pmin", function(x) return core.dist("dist.pmin", operand(x, "dist.pmin"), 0, -1, size) end)
  -- the mean over ranks: floats keep their dtype, integers give float32 (as hl.mean)
  dist.pmean = each("dist.pmean", function(x)
    x = operand(x, "dist.pmean")
    if x.dtype ~= "float32" and x.dtype ~= "float64" and x.dtype ~= "float16" and x.dtype ~= "bfloat16" then
      x = x:astype("float32")
    end
    return core.dist("dist.psum", x, 0, -1, size) / size
  end)
  dist.broadcast = each("dist.broadcast", function(x, root)
    x = operand(x, "dist.broadcast")
    return core.dist("dist.broadcast", x, rank_of(root == nil and 1 or root, "dist.broadcast", "root"), 0, size)
  end)

  function dist.all_gather(x, axis)
    x = operand(x, "dist.all_gather")
    if x.ndim == 0 then fail("dist.all_gather: x is a scalar; gather arrays of at least one axis (reshape it to {1})") end
    return core.dist("dist.all_gather", x, axis_of(x, axis == nil and 1 or axis, "dist.all_gather"), 0, size)
  end

  function dist.reduce_scatter(x, axis)
    x = operand(x, "dist.reduce_scatter")
    if x.ndim == 0 then fail("dist.reduce_scatter: x is a scalar; scatter arrays of at least one axis") end
    return core.dist("dist.reduce_scatter", x, axis_of(x, axis == nil and 1 or axis, "dist.reduce_scatter"), 0, size)
  end

  function dist.all_to_all(x, split_axis, concat_axis)
    x = operand(x, "dist.all_to_all")
    if x.ndim == 0 then fail("dist.all_to_all: x is a scalar; exchange arrays of at least one axis") end
    local s = axis_of(x, split_axis == nil and 1 or split_axis, "dist.all_to_all", "split_axis")
    local c = axis_of(x, concat_axis == nil and s + 1 or concat_axis, "dist.all_to_all", "concat_axis")
    return core.dist("dist.all_to_all", x, s, c, size)
  end

  -- ppermute(x, pairs): pairs {{from, to}, ...} (1-based ranks, each at most once as a source and
  -- once as a destination); a rank no pair sends to gets zeros
  function dist.ppermute(x, pairs)
    x = operand(x, "dist.ppermute")
    if type(pairs) ~= "table" then fail("dist.ppermute: pairs must be a table of {from, to} rank pairs, got %s", type(pairs)) end
    local send_to, recv_from, sources, dests = -1, -1, {}, {}
    for i, p in ipairs(pairs) do
      if type(p) ~= "table" or #p ~= 2 then fail("dist.ppermute: pair %d is not {from, to}", i) end
      local from, to = rank_of(p[1], "dist.ppermute", "pair " .. i .. "'s source"), rank_of(p[2], "dist.ppermute", "pair " .. i .. "'s destination")
      if sources[from] then fail("dist.ppermute: rank %d sends twice (pairs %d and %d)", from + 1, sources[from], i) end
      if dests[to] then fail("dist.ppermute: rank %d receives twice (pairs %d and %d)", to + 1, dests[to], i) end
      sources[from], dests[to] = i, i
      if from == rank0 then send_to = to end
      if to == rank0 then recv_from = from end
    end
    return core.dist("dist.ppermute", x, send_to, recv_from, size)
  end

  ---------------------------------------------------------------- data parallelism

  -- this rank's block of a batch: axis `axis` (default 1) of every leaf split into size equal parts
  function dist.shard(batch, axis)
    start()
    axis = axis or 1
    return tree.map(function(x)
      x = shared.as_array(x, "dist.shard", 1)
      local a = axis_of(x, axis, "dist.shard") + 1
      local n = x.shape[a]
      if n % size ~= 0 then
        fail("dist.shard: axis %d of shape %s does not split into %d equal blocks (one per rank); make the global " ..
             "batch a multiple of %d", a, util.shape_str(x.shape), size, size)
      end
      local m = n / size
      local idx = {}
      for d = 1, x.ndim do idx[d] = {} end
      idx[a] = {rank0 * m + 1, (rank0 + 1) * m}
      return x[idx]
    end, batch)
  end

  -- The leaves of `t` through one collective per bucket: the small leaves of one dtype flattened
  -- and concatenated up to bucket_mb megabytes (one call for all of a model's biases and small
  -- layers, not one per parameter), then split back; a leaf of ALONE bytes or more goes through
  -- a call of its own, in place: concatenating it would copy megabytes for a saving of
  -- microseconds (a 7.5 MB concatenation cost more than the allreduce itself). `collective`
  -- maps an array to the same shape.
  local ALONE = 1048576
  local dtype_bytes = {bool = 1, uint8 = 1, int8 = 1, float16 = 2, bfloat16 = 2, int32 = 4, float32 = 4, int64 = 8, float64 = 8}
  local function bucketed(op, t, bucket_mb, collective)
    local leaves, def = tree.flatten(t)
    local limit = bucket_mb * 1048576
    local out, open = {}, {}   -- open[dtype] = {indices, bytes}
    local function flush(dtype)
      local b = open[dtype]
      if not b or #b.idx == 0 then return end
      open[dtype] = nil
      local parts = {}
      for k, i in ipairs(b.idx) do parts[k] = hl.reshape(leaves[i], {-1}) end
      local flat = collective(#parts == 1 and parts[1] or hl.concatenate(parts, 1))
      local at = 0
      for _, i in ipairs(b.idx) do
        local n = leaves[i].size
        out[i] = hl.reshape(flat[{{at + 1, at + n}}], leaves[i].shape)
        at = at + n
      end
    end
    for i, x in ipairs(leaves) do
      x = shared.as_array(x, op, 1)
      leaves[i] = x
      local bytes = x.size * (dtype_bytes[x.dtype] or 4)
      if x.size == 0 or bytes >= ALONE then
        out[i] = collective(x)
      else
        local b = open[x.dtype]
        if b and b.bytes + bytes > limit then flush(x.dtype) b = nil end
        if not b then b = {idx = {}, bytes = 0} open[x.dtype] = b end
        b.idx[#b.idx + 1], b.bytes = i, b.bytes + bytes
      end
    end
    local dtypes = {}
    for d in pairs(open) do dtypes[#dtypes + 1] = d end
    table.sort(dtypes)   -- the same order on every rank
    for _, d in ipairs(dtypes) do flush(d) end
    return tree.unflatten(def, out)
  end

  -- allreduce_grads(grads [, {mean = true, bucket_mb = 16}]): every leaf summed (or averaged)
  -- over the ranks, in buckets
  function dist.allreduce_grads(grads, opts)
    start()
    opts = util.options("dist.allreduce_grads", opts, {"bucket_mb", "mean"})
    local mean = opts.mean ~= false
    local mb = opts.bucket_mb or 16
    if type(mb) ~= "number" or mb <= 0 then fail("dist.allreduce_grads: bucket_mb must be a positive number, got %s", tostring(mb)) end
    return bucketed("dist.allreduce_grads", grads, mb, function(flat)
      local s = core.dist("dist.psum", flat, 0, -1, size)
      if mean then
        if flat.dtype == "float32" or flat.dtype == "float64" or flat.dtype == "float16" or flat.dtype == "bfloat16" then
          return s / size
        end
        return hl.floor_divide(s, size)
      end
      return s
    end)
  end

  -- sync(params [, {root = 1, bucket_mb = 16}]): every rank gets root's values (identical
  -- parameters to start from)
  function dist.sync(params, opts)
    start()
    opts = util.options("dist.sync", opts, {"bucket_mb", "root"})
    local root = rank_of(opts.root or 1, "dist.sync", "root")
    return bucketed("dist.sync", params, opts.bucket_mb or 16, function(flat)
      return core.dist("dist.broadcast", flat, root, 0, size)
    end)
  end

  -- value_and_grad(f [, argnums] [, opts]): hl.value_and_grad(f) with the value and the gradient
  -- averaged over the ranks (the gradient through allreduce_grads, bucketed). opts: has_aux (as
  -- hl.value_and_grad; the aux stays this rank's), mean, bucket_mb (as allreduce_grads). Each
  -- rank passes its shard of the batch: with equal shards the value and gradient are the whole
  -- batch's mean loss and its gradient.
  function dist.value_and_grad(f, argnums, opts)
    if type(argnums) == "table" and opts == nil and argnums[1] == nil and next(argnums) ~= nil then
      argnums, opts = nil, argnums
    end
    opts = util.options("dist.value_and_grad", opts, {"bucket_mb", "has_aux", "mean"})
    local vg = hl.value_and_grad(f, argnums, opts.has_aux and {has_aux = true} or nil)
    local reduce_opts = {mean = opts.mean, bucket_mb = opts.bucket_mb}
    return function(...)
      local v, g, aux = vg(...)
      v, g = dist.pmean(v), dist.allreduce_grads(g, reduce_opts)
      if opts.has_aux then return v, g, aux end
      return v, g
    end
  end

  -- checkpoints: rank 1 writes, every rank waits for it (and hears of its failure); every rank loads
  local function on_rank1(op, f, ...)
    start()
    local ok, err = true, nil
    if rank0 == 0 then ok, err = pcall(f, ...) end
    local status = core.dist("dist.broadcast", hl.array(ok and 0 or 1, "int32"), 0, 0, size):item()
    if status ~= 0 then
      if rank0 == 0 then error(err, 0) end
      fail("%s: rank 1 failed to write the checkpoint", op)
    end
  end
  function dist.save(path, x) on_rank1("dist.save", hl.save, path, x) end
  function dist.savez(path, ...) on_rank1("dist.savez", hl.savez, path, ...) end
  function dist.load(path) start() return hl.load(path) end
  function dist.loadz(path) start() return hl.loadz(path) end

  -- printing from rank 1 only (other ranks print nothing)
  function dist.print(...)
    start()
    if rank0 == 0 then print(...) end
  end

  hl.dist = dist
end
