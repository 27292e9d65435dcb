-- The derivative of hl.linalg.det: the cofactor matrix, at regular, near-singular and singular
-- matrices (rank n - 1: rank one; rank n - 2: zero), against the cofactors NumPy computes from
-- minors, and against central differences at regular matrices; batched, under vmap, jit and jvp;
-- float32 and float64.
local hl = require "halua"
local np = require "support.numpy"
local dc = require "support.diff_check"
local F64 = "float64"

-- the cofactor matrices of a stack of matrices a [..., n, n], from minors
local COF = "(lambda cof: np.stack([cof(m) for m in a.reshape((-1,) + a.shape[-2:])]).reshape(a.shape))" ..
  "(lambda m: np.array([[(-1) ** (i + j) * np.linalg.det(np.delete(np.delete(m, i, 0), j, 1))" ..
  " for j in range(m.shape[1])] for i in range(m.shape[0])]))"

local function det_sum(x) return hl.linalg.det(x):sum() end

describe("linalg.det's derivative", function()
  local key = hl.random.key(12)
  local ks = hl.random.split(key, 4)
  local b = hl.random.normal(ks[1], {4, 3}, F64)
  local c = hl.random.normal(ks[2], {3, 4}, F64)
  local regular = hl.random.normal(ks[3], {4, 4}, F64)
  local rank3 = hl.matmul(b, c)
  local rank2 = hl.matmul(b[{{}, {1, 2}}], c[{{1, 2}, {}}])
  -- singular values 1e-9 .. 3: regular in exact arithmetic, far past where det(a) inv(a)^T is accurate
  local q1 = hl.linalg.qr(hl.random.normal(ks[4], {4, 4}, F64))
  local q2 = hl.linalg.qr(regular)
  local near = hl.matmul(q1 * hl.array({3, 2, 1, 1e-9}, F64), q2)
  local stack = hl.stack({regular, rank3, rank2, near})
  local batch = np.batch()
  local want = batch:add(COF, {stack})
  local want32 = batch:add(COF, {stack:astype("float32"):astype(F64)})
  local int = hl.array({{1, 2, 3}, {4, 5, 6}, {7, 8, 9}}, F64)
  local want_int = batch:add(COF, {int})
  batch:run()
  local tol = {rtol = 1e-9, atol = 1e-9, dtype = false}

  it("is the cofactor matrix at regular, rank n - 1, rank n - 2 and near-singular matrices", function()
    local names = {"regular", "rank 3", "rank 2", "near singular"}
    local w = want()
    for i = 1, 4 do
      local g = hl.grad(hl.linalg.det)(stack[i])
      local wi = {dtype = F64, shape = {4, 4}, values = {}}
      for j = 1, 16 do wi.values[j] = w.values[(i - 1) * 16 + j] end
      local ok, e = pcall(np.assert_close, g, wi, tol)
      assert(ok, names[i] .. ": " .. tostring(e))
    end
    -- rank 2: every cofactor is zero
    assert(hl.max(hl.abs(hl.grad(hl.linalg.det)(rank2))):item() < 1e-9)
  end)

  it("matches central differences at a regular matrix", function()
    dc.close(hl.grad(det_sum)(regular), dc.numeric(det_sum, regular, 1e-6), 1e-7, "grad det")
  end)

  it("is batched over leading axes, and the same under vmap, jit and jvp", function()
    np.assert_close(hl.grad(det_sum)(stack), want(), tol)
    np.assert_close(hl.vmap(hl.grad(hl.linalg.det))(stack), want(), tol)
    np.assert_close(hl.jit(hl.grad(det_sum))(stack), want(), tol)
    local two = hl.reshape(hl.concatenate({stack, stack}, 1), {2, 4, 4, 4})
    local g2 = hl.jit(hl.vmap(hl.grad(det_sum)))(two)
    np.assert_close(g2[2], want(), tol)
    -- jvp: d det = sum(C * t)
    local t = hl.random.normal(hl.random.key(3), {4, 4, 4}, F64)
    local _, dd = hl.jvp(hl.linalg.det, {stack}, {t})
    local c = hl.grad(det_sum)(stack)
    dc.close(dd, dc.flat(hl.sum(c * t, {2, 3})), 1e-12, "jvp")
  end)

  it("works in float32, exactly singular matrices included", function()
    local g = hl.grad(det_sum)(stack:astype("float32"))
    assert.are.equal("float32", g.dtype)
    np.assert_close(g, want32(), {rtol = 2e-3, atol = 2e-3, dtype = false})
    local gi = hl.jit(hl.grad(hl.linalg.det))(int:astype("float32"))
    np.assert_close(gi, want_int(), {rtol = 1e-4, atol = 1e-4, dtype = false})
    np.assert_close(hl.grad(hl.linalg.det)(int), want_int(), tol)
  end)

  it("has second derivatives where a is regular (the hessian at the identity)", function()
    local h = hl.hessian(hl.linalg.det)(hl.eye(3):astype(F64))
    -- d^2 det / da_ij da_kl at I: 1 for i = j, k = l, i ~= k; -1 for (i, j) = (l, k), i ~= j; else 0
    for i = 1, 3 do for j = 1, 3 do for k = 1, 3 do for l = 1, 3 do
      local want_h = (i == j and k == l and i ~= k) and 1 or (i == l and j == k and i ~= j) and -1 or 0
      local got = h[{i, j, k, l}]:item()
      assert(math.abs(got - want_h) < 1e-12, string.format("H[%d,%d,%d,%d] = %g, expected %g", i, j, k, l, got, want_h))
    end end end end
  end)

  it("1x1 and 0x0 matrices", function()
    assert.are.same({{1}}, hl.grad(hl.linalg.det)(hl.zeros({1, 1}, F64)):totable())
    assert.are.same({{1}}, hl.grad(hl.linalg.det)(hl.full({1, 1}, 5, F64)):totable())
    assert.are.same({0, 0}, hl.grad(hl.linalg.det)(hl.zeros({0, 0}, F64)).shape)
  end)
end)
