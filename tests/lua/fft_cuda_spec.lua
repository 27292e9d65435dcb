-- hl.fft on CUDA (cuFFT, engine/backend/extern/hl_extern_cufft.cpp): the same answers as on the
-- CPU, eagerly and under jit, for the layouts cuFFT reads in place and those copied first, for
-- regions of a transform a pipeline asks for, and through grad and vmap. Where there is no GPU,
-- it checks which stage a CUDA pipeline lowers to and says the comparisons were skipped.
-- HALUA_FFT_SPEC_DEVICE=cpu runs the comparisons with "cpu" in place of "cuda" (a check of this
-- file on a machine without a GPU; it says nothing of cuFFT).
local hl = require "halua"
local ffi = require "ffi"

local target = os.getenv("HALUA_FFT_SPEC_DEVICE") or "cuda"
local have_cuda = #hl.devices() > 1

-- whether the engine will find cuFFT (the names hl_extern_cufft.cpp tries)
local function cufft_loads()
  if os.getenv("HALUA_NO_CUFFT") then return false end
  for _, n in ipairs {os.getenv("HALUA_CUFFT") or "", "libcufft.so.12", "libcufft.so.11", "libcufft.so",
                      "/usr/local/cuda/lib64/libcufft.so.12", "/usr/local/cuda/lib64/libcufft.so.11",
                      "/usr/local/cuda/lib64/libcufft.so"} do
    if n ~= "" and pcall(ffi.load, n) then return true end
  end
  return false
end

-- the loop nest of f's CUDA pipeline, in this process or in one with env set
local function cuda_stmt(env)
  local code = [[local hl = require "halua"
    local x = hl.complex(hl.reshape(hl.arange(24), {3, 8}):to("cpu"), hl.zeros({3, 8}):to("cpu"))
    io.write(hl.jit(function(z) return hl.fft.fft(z * 2) end, {device = "cuda"}):lower(x):stmt())]]
  if not env then return assert(load(code:gsub("io%.write", "return")))() end
  local p = io.popen(env .. " HALUA_QUIET=1 luajit -e '" .. code .. "' 2>&1")
  local out = p:read("*a")
  p:close()
  return out
end

describe("fft in a CUDA pipeline", function()
  it("is the cuFFT stage where cuFFT loads, the host stage where it does not", function()
    local s = cuda_stmt()
    if cufft_loads() then
      assert.truthy(s:find("hl_stage_cufft", 1, true), "no cuFFT stage")
      assert.falsy(s:find("hl_stage_fft", 1, true), "a host stage besides")
    else
      assert.truthy(s:find("hl_stage_fft", 1, true), "no host stage")
      assert.falsy(s:find("hl_stage_cufft", 1, true))
    end
  end)
  it("is the host stage with HALUA_NO_CUFFT=1", function()
    local s = cuda_stmt("HALUA_NO_CUFFT=1")
    assert.truthy(s:find("hl_stage_fft", 1, true), "no host stage in:\n" .. s:sub(1, 400))
    assert.falsy(s:find("hl_stage_cufft", 1, true))
  end)
  it("and on the CPU is always the host stage", function()
    local x = hl.complex(hl.ones({3, 8}):to("cpu"), hl.zeros({3, 8}):to("cpu"))
    local s = hl.jit(function(z) return hl.fft.fft(z * 2) end, {device = "cpu"}):lower(x):stmt()
    assert.truthy(s:find("hl_stage_fft", 1, true))
    assert.falsy(s:find("hl_stage_cufft", 1, true))
  end)
end)

if not have_cuda and target == "cuda" then
  describe("fft on CUDA", function()
    it("(the comparisons with the CPU are skipped: no GPU on this machine)", function() end)
  end)
  return
end

-- the largest difference of a and b (on any devices) relative to b's largest magnitude
local function rel_diff(a, b)
  local function parts(z)
    z = z:to("cpu")
    if z.dtype == "complex64" or z.dtype == "complex128" then return {hl.real(z), hl.imag(z)} end
    return {z}
  end
  local pa, pb = parts(a), parts(b)
  assert.are.equal(#pb, #pa)
  assert.are.same(b.shape, a.shape)
  local diff, scale = 0, 1e-30
  for k = 1, #pa do
    local ta, tb = hl.flatten(pa[k]):totable(), hl.flatten(pb[k]):totable()
    for i = 1, #tb do
      diff = math.max(diff, math.abs(ta[i] - tb[i]))
      scale = math.max(scale, math.abs(tb[i]))
    end
  end
  return diff / scale
end

describe("fft on " .. target .. " gives the CPU's answers", function()
  math.randomseed(22)
  local function rand(shape)
    local n = 1
    for _, e in ipairs(shape) do n = n * e end
    local v = {}
    for i = 1, n do v[i] = 2 * math.random() - 1 end
    return hl.reshape(hl.array(v), shape):to("cpu")   -- on the host even when HALUA_DEVICE=cuda
  end
  local function crand(shape, dtype)
    local z = hl.complex(rand(shape), rand(shape))
    return dtype and z:astype(dtype) or z
  end
  local tol = {complex64 = 2e-5, complex128 = 1e-12, float32 = 2e-5, float64 = 1e-12}

  -- f on the CPU and on the target, eagerly and jitted, agree
  local function same(f, x, what)
    local want = f(x)
    local gx = x:to(target)
    local got = f(gx)
    assert.are.equal(target, got.device:match("^%a+"), what .. ": the result left the device")
    local t = tol[want.dtype] or tol[x.dtype]
    local e = rel_diff(got, want)
    assert.is_true(e < t, string.format("%s eagerly: relative difference %.3g", what, e))
    local jitted = hl.jit(f, {device = target})(gx)
    e = rel_diff(jitted, want)
    assert.is_true(e < t, string.format("%s under jit: relative difference %.3g", what, e))
  end

  it("transforms powers of two, primes and other lengths, complex64 and complex128", function()
    for _, n in ipairs {1, 2, 16, 97, 120, 1024, 1031} do
      for _, dt in ipairs {"complex64", "complex128"} do
        local z = crand({n}, dt)
        same(function(a) return hl.fft.fft(a) end, z, "fft n=" .. n .. " " .. dt)
        same(function(a) return hl.fft.ifft(a) end, z, "ifft n=" .. n .. " " .. dt)
      end
    end
  end)

  it("batches lanes along every axis (batched calls and loops of them)", function()
    local z = crand({3, 8, 5})
    for axis = 1, 3 do
      same(function(a) return hl.fft.fft(a, nil, axis) end, z, "fft of [3,8,5] along " .. axis)
    end
    local w = crand({4, 6, 3, 7}, "complex128")
    same(function(a) return hl.fft.fftn(a) end, w, "fftn of [4,6,3,7]")
    same(function(a) return hl.fft.ifft2(a, nil, nil, "ortho") end, w, "ortho ifft2 of [4,6,3,7]")
  end)

  it("reads strided, transposed and broadcast operands", function()
    local z = crand({6, 10})
    same(function(a) return hl.fft.fft(hl.transpose(a)) end, z, "fft of a transpose")
    same(function(a) return hl.fft.fft(a[{{}, {1, 10, 2}}]) end, z, "fft of every other column")
    same(function(a) return hl.fft.fft(a[{{2, 5}, {3, 9}}]) end, z, "fft of a window")
    -- a lane of one repeated value (step 0 along the transform): copied before cuFFT reads it
    local row = crand({1, 10})
    same(function(a) return hl.fft.fft(hl.broadcast_to(a, {8, 10}), nil, 1) end, row, "fft along a broadcast axis")
    same(function(a) return hl.fft.fft(hl.broadcast_to(a, {8, 10})) end, row, "fft of broadcast rows")
  end)

  it("transforms real input (rfft, irfft, rfftn) and pads or cuts to n", function()
    local x = rand({5, 12})
    same(function(a) return hl.fft.rfft(a) end, x, "rfft")
    same(function(a) return hl.fft.irfft(hl.fft.rfft(a), 12) end, x, "irfft of rfft")
    same(function(a) return hl.fft.rfftn(a) end, x:astype("float64"), "rfftn float64")
    same(function(a) return hl.fft.fft(a, 20) end, x, "fft padded to 20")
    same(function(a) return hl.fft.fft(a, 7, 1) end, x, "fft cut to 7")
  end)

  it("gives a pipeline the part of a transform it reads", function()
    local z = crand({4, 16})
    -- the real parts alone, and some positions of each lane: the stage transforms whole lanes
    -- into a temporary and copies the region asked for
    same(function(a) return hl.real(hl.fft.fft(a)) end, z, "the real part of fft")
    same(function(a) return hl.fft.fft(a)[{{}, {3, 9}}] end, z, "positions 3..9 of fft")
    same(function(a) return hl.imag(hl.fft.fft(a))[{{2, 3}, {5, 5}}] end, z, "one imaginary column of two lanes")
    -- and a transform whose input another GPU stage made, and whose output feeds another
    same(function(a) return hl.abs(hl.fft.ifft(hl.fft.fft(a * 3) * 2)) end, z, "fft between kernels")
  end)

  it("differentiates and batches as on the CPU", function()
    local x = rand({3, 10})
    local loss = function(a) return hl.sum(hl.abs(hl.fft.rfft(a * a)) ^ 2) end
    same(hl.grad(loss), x, "grad of a spectrum's energy")
    same(hl.vmap(function(a) return hl.fft.fft(a) end), crand({4, 9}), "vmap of fft")
  end)

  it("(float64 transforms of 2^16 values agree closely)", function()
    local z = crand({65536}, "complex128")
    same(function(a) return hl.fft.fft(a) end, z, "fft n=65536 complex128")
  end)
end)
