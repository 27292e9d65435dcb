-- hl.dist's collectives, run on every rank of an MPI job (tests/lua/dist_spec.lua starts it with
-- mpirun -np 2 and -np 3). Each rank's operand is a known function of its rank, so every rank
-- builds every other rank's operand and checks the collective against its definition. Every
-- test makes the same collective calls on every rank, failing or not, so that a failure cannot
-- leave the ranks out of step.
local hl = require "halua"
local dist = hl.dist
local rank, size = dist.init()

-- rank r's operand: distinct values on every rank, and not monotonic in r (so pmax is not the last rank)
local function operand(r, shape, dtype)
  local n = 1
  for _, e in ipairs(shape) do n = n * e end
  local v = hl.sin(hl.arange(n):astype("float64") * 0.7 + r * 1.3) * 10
  if dtype and dtype:find("int") then v = hl.round(v) end
  return v:reshape(shape):astype(dtype or "float32")
end
local function all_operands(shape, dtype)
  local xs = {}
  for r = 1, size do xs[r] = operand(r, shape, dtype) end
  return xs
end

local function same(got, want, tol)
  assert.are.same(want.shape, got.shape)
  assert.are.equal(want.dtype, got.dtype)
  local err = hl.max(hl.abs(got:astype("float64") - want:astype("float64"))):item()
  assert(err <= (tol or 0), string.format("differs by %g (tolerance %g)", err, tol or 0))
end

local function block(x, axis, r, n)   -- block r (1-based) of n equal blocks along axis
  local m = x.shape[axis] / n
  local idx = {}
  for d = 1, x.ndim do idx[d] = {} end
  idx[axis] = {(r - 1) * m + 1, r * m}
  return x[idx]
end

local function total(xs, f)
  local acc = xs[1]
  for r = 2, #xs do acc = f(acc, xs[r]) end
  return acc
end

describe("hl.dist on " .. size .. " ranks", function()
  it("says which rank this is, 1-based", function()
    assert.are.equal(size, dist.size())
    assert.are.equal(rank, dist.rank())
    local ranks = dist.all_gather(hl.array({rank}, "int32"), 1)
    local want = {}
    for r = 1, size do want[r] = r end
    assert.are.same(want, ranks:totable())
    dist.barrier()
  end)

  for _, dtype in ipairs({"float32", "float64", "float16", "bfloat16", "int32", "int64", "int8", "uint8"}) do
    it("psum, pmean, pmax and pmin of " .. dtype, function()
      local shape = {3, 4}
      local xs = all_operands(shape, dtype)
      if dtype == "uint8" then for r = 1, size do xs[r] = hl.abs(xs[r]:astype("int32")):astype("uint8") end end
      local x = xs[rank]
      local tol = (dtype == "float16" or dtype == "bfloat16") and 0.25 or dtype:find("float") and 1e-5 or 0
      same(dist.psum(x), total(xs, function(a, b) return a + b end), tol)
      same(dist.pmax(x), total(xs, hl.maximum))
      same(dist.pmin(x), total(xs, hl.minimum))
      local wide = {}
      for r = 1, size do wide[r] = xs[r]:astype("float64") end
      local mean = total(wide, function(a, b) return a + b end) / size
      local pm = dist.pmean(x)
      assert.are.equal(dtype:find("float") and dtype or "float32", pm.dtype)
      same(pm:astype("float64"), mean, tol > 0 and tol or 1e-5)
    end)
  end

  -- large reductions (MPI splits them into segments): every rank must get the same bits
  for _, dtype in ipairs({"float32", "float64", "int32", "int64", "int8", "uint8"}) do
    it("psum, pmax and pmin of 300,001 " .. dtype .. " ", function()
      local shape = {300001}
      local xs = all_operands(shape, dtype)
      if dtype == "uint8" or dtype == "int8" then
        for r = 1, size do xs[r] = hl.mod(hl.abs(xs[r]:astype("int32")), 50):astype(dtype) end
      end
      local x = xs[rank]
      local tol = dtype:find("float") and 1e-4 or 0
      local s = dist.psum(x)
      same(s, total(xs, function(a, b) return a + b end), tol)
      same(dist.pmax(x), total(xs, hl.maximum))
      same(dist.pmin(x), total(xs, hl.minimum))
      -- the same bits on every rank
      same(dist.pmax(s), s)
      same(dist.pmin(s), s)
      same(hl.jit(function(v) return dist.psum(v * 2) end)(x), s * 2, tol * 2)
    end)
  end
  it("a NaN wins a large pmax, as a sum", function()
    local x = hl.zeros(100000):at(5):set(rank == 1 and 0 / 0 or 1)
    local m = dist.pmax(x)
    assert.is_true(m[5]:item() ~= m[5]:item())
    assert.are.equal(0, m[6]:item())
  end)

  it("psum of a pytree, a number and a scalar", function()
    local t = dist.psum({a = hl.ones(2), b = {hl.full({1}, rank)}})
    same(t.a, hl.full({2}, size))
    same(t.b[1], hl.full({1}, size * (size + 1) / 2))
    assert.are.equal(size, dist.psum(1):item())
    assert.are.equal(0, dist.psum(hl.array(rank)).ndim)
  end)

  for _, case in ipairs({{{2, 3}, 1}, {{2, 3}, 2}, {{2, 3, 2}, 2}, {{2, 3}, -1}, {{4}, 1}}) do
    local shape, axis = case[1], case[2]
    it(string.format("all_gather of %s along axis %d", table.concat(shape, "x"), axis), function()
      local xs = all_operands(shape)
      same(dist.all_gather(xs[rank], axis), hl.concatenate(xs, axis < 0 and #shape + 1 + axis or axis))
    end)
  end

  for _, case in ipairs({{{2, 3}, 1}, {{3, 2}, 2}, {{2, 1, 5}, 2}}) do
    local shape, axis = case[1], case[2]
    it(string.format("reduce_scatter along axis %d", axis), function()
      shape = {shape[1], shape[2], shape[3]}
      shape[axis] = shape[axis] * size
      local xs = all_operands(shape)
      local sum = total(xs, function(a, b) return a + b end)
      same(dist.reduce_scatter(xs[rank], axis), block(sum, axis, rank, size), 1e-5)
    end)
  end

  it("broadcast from every root, and of integers and bools", function()
    local xs = all_operands({2, 2})
    for root = 1, size do same(dist.broadcast(xs[rank], root), xs[root]) end
    same(dist.broadcast(hl.array({rank, rank}, "int64"), size), hl.array({size, size}, "int64"))
    same(dist.broadcast(hl.array({rank == 1, true}), 1), hl.array({true, true}))
  end)

  it("ppermute: a ring shift, and a permutation that leaves a rank out (zeros)", function()
    local xs = all_operands({3})
    local ring = {}
    for r = 1, size do ring[r] = {r, r % size + 1} end
    local from = (rank - 2) % size + 1
    same(dist.ppermute(xs[rank], ring), xs[from])
    -- only 1 -> size: every other rank gets zeros
    local got = dist.ppermute(xs[rank], {{1, size}})
    same(got, rank == size and xs[1] or hl.zeros({3}))
  end)

  for _, case in ipairs({{{2, 3}, 1, 2}, {{3, 2}, 2, 1}, {{2, 2, 3}, 1, 1}, {{2, 3, 2}, 3, 2}}) do
    local shape, s, c = case[1], case[2], case[3]
    it(string.format("all_to_all split along %d, concatenated along %d", s, c), function()
      shape = {shape[1], shape[2], shape[3]}
      shape[s] = shape[s] * size
      local xs = all_operands(shape)
      -- this rank receives block `rank` of every rank's operand, in rank order, along c
      local parts = {}
      for r = 1, size do parts[r] = block(xs[r], s, rank, size) end
      same(dist.all_to_all(xs[rank], s, c), hl.concatenate(parts, c))
    end)
  end

  it("runs inside hl.jit as the eager ops do", function()
    local xs = all_operands({4, 2 * size})
    local f = hl.jit(function(x)
      local s = dist.psum(x * 2)
      return s + 1, dist.all_gather(x, 2), dist.reduce_scatter(hl.exp(x), 2), dist.all_to_all(x, 2, 1),
             dist.broadcast(x, size), dist.pmax(x)
    end)
    local a, b, c, d, e, m = f(xs[rank])
    same(a, dist.psum(xs[rank] * 2) + 1, 1e-4)
    same(b, dist.all_gather(xs[rank], 2))
    same(c, dist.reduce_scatter(hl.exp(xs[rank]), 2), 1e-3)
    same(d, dist.all_to_all(xs[rank], 2, 1))
    same(e, xs[size])
    same(m, dist.pmax(xs[rank]))
    -- a region of a collective's result (the pipeline asks for part of it)
    local g = hl.jit(function(x) return dist.all_gather(x, 1)[{{2, 3}}] end)
    same(g(xs[rank]), hl.concatenate(xs, 1)[{{2, 3}}])
  end)

  it("runs under hl.jit's dynamic_axes: one program for every batch size", function()
    local f = hl.jit(function(x)
      return dist.psum(x * 2) + 1, dist.all_gather(x, 1), dist.all_gather(x, 2), dist.reduce_scatter(hl.exp(x), 2),
             dist.broadcast(x, size), dist.pmax(x)
    end, {dynamic_axes = {1}})
    for _, n in ipairs {1, 3, 4, 7} do
      local xs = all_operands({n, 2 * size})
      local a, b, b2, c, e, m = f(xs[rank])
      same(a, dist.psum(xs[rank] * 2) + 1, 1e-4)
      same(b, hl.concatenate(xs, 1))
      same(b2, dist.all_gather(xs[rank], 2))
      same(c, dist.reduce_scatter(hl.exp(xs[rank]), 2), 1e-3)
      same(e, xs[size])
      same(m, dist.pmax(xs[rank]))
    end
    assert.truthy(tostring(f):find("4 signatures traced, 4 of them by 1 polymorphic program", 1, true), tostring(f))
  end)

  -- The gradient of F = sum over ranks of L_r, L_r = sum(w_r * c(x_r)), by central differences
  -- on one element of one rank at a time, against hl.grad on that rank (eagerly and jitted).
  local function check_grad(name, c, shape)
    it("the gradient of " .. name .. " (finite differences, all ranks' losses summed)", function()
      local x = operand(rank, shape, "float64")
      local out_shape = c(x).shape
      local w = operand(rank + 7, out_shape, "float64") * 0.1
      local function L(v) return hl.sum(w * c(v)) end
      local g = hl.grad(L)(x)
      local jg = hl.jit(hl.grad(L))(x)
      same(jg, g, 1e-9)
      local eps = 1e-5
      for s = 1, size do
        local gs = dist.broadcast(g, s)   -- rank s's gradient, seen everywhere
        for _, j in ipairs({1, x.size}) do
          local e = hl.zeros({x.size}, "float64"):at(j):set(rank == s and eps or 0):reshape(shape)
          local fp = dist.psum(L(x + e)):item()
          local fm = dist.psum(L(x - e)):item()
          local num = (fp - fm) / (2 * eps)
          local ana = gs:reshape({-1})[j]:item()
          assert(math.abs(num - ana) <= 1e-6 * math.max(1, math.abs(num)),
                 string.format("rank %d element %d: numeric %.10g, hl.grad %.10g", s, j, num, ana))
        end
      end
    end)
  end
  check_grad("psum", dist.psum, {2, 3})
  check_grad("pmean", dist.pmean, {2, 3})
  check_grad("pmax", dist.pmax, {2, 3})
  check_grad("pmin", dist.pmin, {3})
  check_grad("all_gather", function(v) return dist.all_gather(v, 2) end, {2, 3})
  check_grad("reduce_scatter", function(v) return dist.reduce_scatter(v, 1) end, {2 * size, 2})
  check_grad("broadcast", function(v) return dist.broadcast(v, size) end, {2, 2})
  check_grad("ppermute", function(v)
    local ring = {}
    for r = 1, size do ring[r] = {r, r % size + 1} end
    return dist.ppermute(v, ring)
  end, {3})
  check_grad("all_to_all", function(v) return dist.all_to_all(v, 1, 2) end, {2 * size, 3})

  it("forward mode (jvp) agrees with reverse mode", function()
    local x = operand(rank, {2 * size, 3}, "float64")
    local t = operand(rank + 3, {2 * size, 3}, "float64")
    for _, c in ipairs({dist.psum, dist.pmax, function(v) return dist.all_gather(v, 1) end,
                        function(v) return dist.all_to_all(v, 1, 2) end, function(v) return dist.broadcast(v, 1) end}) do
      local _, jt = hl.jvp(c, {x}, {t})
      -- <w, J t> summed over ranks equals <J^T w, t> summed over ranks
      local w = operand(rank + 11, jt.shape, "float64")
      local lhs = dist.psum(hl.sum(w * jt)):item()
      local gw = hl.grad(function(v) return hl.sum(w * c(v)) end)(x)
      local rhs = dist.psum(hl.sum(gw * t)):item()
      assert(math.abs(lhs - rhs) <= 1e-9 * math.max(1, math.abs(lhs)), string.format("%g vs %g", lhs, rhs))
    end
  end)

  it("batches under hl.vmap", function()
    local xs = operand(rank, {3, 2, 2 * size})
    local function stacked(f)
      local rows = {}
      for i = 1, 3 do rows[i] = f(xs[i]) end
      return hl.stack(rows, 1)
    end
    for _, f in ipairs({dist.psum, dist.pmin, function(v) return dist.all_gather(v, 1) end,
                        function(v) return dist.reduce_scatter(v, 2) end, function(v) return dist.all_to_all(v, 2, 1) end,
                        function(v) return dist.broadcast(v, 1) end}) do
      same(hl.vmap(f)(xs), stacked(f), 1e-5)
      same(hl.jit(hl.vmap(f))(xs), stacked(f), 1e-5)
    end
  end)

  it("shard, allreduce_grads (bucketed), sync and value_and_grad", function()
    local batch = hl.arange(4 * size):reshape({2 * size, 2})
    same(dist.shard(batch), batch[{{2 * rank - 1, 2 * rank}}])
    local wide = hl.arange(4 * size):reshape({2, 2 * size})
    same(dist.shard({wide}, 2)[1], wide[{{}, {2 * rank - 1, 2 * rank}}])
    local grads = {w = operand(rank, {3, 2}), b = operand(rank, {2}, "float64"), n = {operand(rank, {5})}}
    for _, mb in ipairs({16, 1e-5}) do   -- one bucket per dtype, and one per leaf
      local avg = dist.allreduce_grads(grads, {bucket_mb = mb})
      same(avg.w, dist.pmean(grads.w), 1e-6)
      same(avg.b, dist.pmean(grads.b), 1e-12)
      same(avg.n[1], dist.pmean(grads.n[1]), 1e-6)
    end
    same(dist.allreduce_grads(grads, {mean = false}).w, dist.psum(grads.w), 1e-6)
    local p = dist.sync({a = hl.full({2}, rank)}, {root = size})
    same(p.a, hl.full({2}, size))
    local function loss(w, x) return hl.mean((x * w) ^ 2) end
    local x = operand(rank, {4})
    local v, g = dist.value_and_grad(loss)(hl.array(2.0), x)
    local all = hl.concatenate(all_operands({4}), 1)
    local v1, g1 = hl.value_and_grad(loss)(hl.array(2.0), all)
    same(v, v1, 1e-5 * math.abs(v1:item()))
    same(g, g1, 1e-5 * math.abs(g1:item()))
  end)

  it("checkpoints: rank 1 writes, every rank loads", function()
    local path = os.getenv("HALUA_DIST_TEST_DIR") .. "/ckpt.npy"
    dist.save(path, hl.full({2}, rank))
    same(dist.load(path), hl.full({2}, 1))
    local ok, err = pcall(dist.save, "/nonexistent-dir/x.npy", hl.ones(1))
    assert.is_false(ok)
    assert.matches(rank == 1 and "halua: save:" or "halua: dist.save: rank 1 failed to write the checkpoint", err)
  end)

  it("errors: shapes, dtypes and axes that differ across ranks, bad ranks and axes", function()
    local ok, err = pcall(dist.psum, hl.ones(rank + 1))
    local jok, jerr = pcall(hl.jit(function(v) return dist.psum(v) end), hl.ones(rank + 1))
    local tok, terr = pcall(dist.psum, hl.ones(2, rank == 1 and "float32" or "int32"))
    local aok, aerr = pcall(dist.all_gather, hl.ones({2, 2}), rank == 1 and 1 or 2)
    if size > 1 then   -- (one rank agrees with itself)
      assert.is_false(ok)
      assert.matches("halua: dist.psum: the ranks' operands differ: rank " .. rank .. " has dist.psum float32%[" .. rank + 1 ..
                     "%], rank %d dist.psum float32%[%d%] %(every rank must make the same collective calls", err)
      -- under jit the pipeline's stage fails and the call raises the same error
      assert.is_false(jok)
      assert.matches("the ranks' operands differ", jerr)
      assert.is_false(tok)
      assert.matches("rank %d has dist.psum (%w+)%[2%], rank %d dist.psum (%w+)%[2%]", terr)
      assert.is_false(aok)
      assert.matches("halua: dist.all_gather: the ranks disagree on the axis: %d on rank " .. rank .. ", %d on rank %d", aerr)
    end
    -- checked before any communication: every rank raises them alike
    assert.has_error(function() dist.broadcast(hl.ones(2), size + 1) end,
                     "halua: dist.broadcast: root must be a rank 1.." .. size .. ", got " .. size + 1)
    assert.has_error(function() dist.all_gather(hl.ones(2), 2) end, "halua: dist.all_gather: axis 2 out of range for shape [2]")
    assert.has_error(function() dist.ppermute(hl.ones(2), {{1, 1}, {1, 1}}) end,
                     "halua: dist.ppermute: rank 1 sends twice (pairs 1 and 2)")
    -- bools are counted, as hl.sum counts them
    same(dist.psum(hl.array({true, rank == 1})), hl.array({size, 1}, "int32"))
    if size > 1 then
      assert.has_error(function() dist.reduce_scatter(hl.ones(size + 1), 1) end,
                       "halua: dist.reduce_scatter: axis 1 of shape [" .. size + 1 .. "] does not split into " .. size ..
                       " equal blocks (one per rank)")
    end
    assert.has_error(function() dist.allreduce_grads({hl.ones(1)}, {bucket = 1}) end,
                     "halua: dist.allreduce_grads: unknown option 'bucket' (the options are bucket_mb, mean)")
    if size > 1 then
      assert.has_error(function() dist.shard(hl.ones(size + 1)) end,
                       "halua: dist.shard: axis 1 of shape [" .. size + 1 .. "] does not split into " .. size ..
                       " equal blocks (one per rank); make the global batch a multiple of " .. size)
    end
    -- and the ranks are still in step
    same(dist.psum(hl.ones(2)), hl.full({2}, size))
  end)
end)
