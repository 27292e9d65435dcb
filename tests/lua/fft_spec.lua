-- hl.fft (lua/halua/fft.lua, engine/host/hl_fft.c) against numpy.fft: every function, the three
-- norm modes, n and s cropping and padding, axes (negative, middle, non-contiguous inputs), the
-- lengths of each kernel (radices 2 to 31, Bluestein past them, long transforms), dtypes; the
-- transforms' identities; jit (the extern stage alone, fused, and asked for a region); vmap; grad,
-- vjp and jvp against central differences and NumPy (JAX's convention for complex inputs); and
-- every error message's words.
local hl = require "halua"
local np = require "support.numpy"
local diff_check = require "support.diff_check"
local errors = require "support.errors"
local F = hl.fft
local err_of, has = errors.err_of, errors.has

math.randomseed(3131)

local function rand(shape, dtype) return np.rand(shape, -1, 1, dtype or "float64") end
-- complex values with parts in [-1, 1): complex64 from float32 parts, complex128 from float64 ones
local function crand(shape, dtype)
  local p = dtype == "complex64" and "float32" or "float64"
  return hl.complex(rand(shape, p), rand(shape, p))
end
local function dims(s) return "[" .. table.concat(s, ",") .. "]" end
-- halua's 1-based axes as Python's
local function pyaxis(a) return a < 0 and a or a - 1 end
local function pyaxes(t)
  local r = {}
  for i, a in ipairs(t) do r[i] = tostring(pyaxis(a)) end
  return "(" .. table.concat(r, ",") .. ",)"
end
local function pytuple(t) return "(" .. table.concat(t, ",") .. ",)" end
local function pynorm(norm) return norm and string.format("%q", norm) or "None" end

-- The bound on a transform's error: relative to the largest modulus of the result, about ten
-- times the largest error measured against NumPy over every length below (float32 2.4e-7, float64
-- 1.2e-15, Bluestein's lengths included).
local TOL = {complex64 = 2e-6, float32 = 2e-6, complex128 = 1e-14, float64 = 1e-14}

local function part(v, k)
  if type(v) == "table" then return v[k] end
  return k == 1 and v or 0
end

-- got (an hl array) against want (a NumPy result from a batch): opts.dtype is the dtype got must
-- have (NumPy 1.x computes every transform in float64), the values within opts.tol (default by
-- that dtype) times the largest modulus of want
local function check(got, want, opts)
  assert(not want.error, "NumPy raised: " .. tostring(want.error))
  assert(hl.core.is_array(got), "not an array: " .. tostring(got))
  assert(got.dtype == opts.dtype, "dtype " .. got.dtype .. ", expected " .. opts.dtype)
  assert(dims(got.shape) == dims(want.shape), "shape " .. dims(got.shape) .. ", NumPy's " .. dims(want.shape))
  local g = hl.reshape(got, {got.size}):totable()
  assert(#g == #want.values, "got " .. #g .. " values, NumPy " .. #want.values)
  local scale, worst, at = 0, 0, 0
  for i, w in ipairs(want.values) do
    assert(type(g[i]) == type(w), "element " .. i .. ": one value is complex, the other is not")
    local wr, wi, gr, gi = part(w, 1), part(w, 2), part(g[i], 1), part(g[i], 2)
    scale = math.max(scale, math.sqrt(wr * wr + wi * wi))
    local e = math.sqrt((gr - wr) ^ 2 + (gi - wi) ^ 2)
    if not (e <= worst) then worst, at = e, i end
  end
  local tol = opts.tol or TOL[opts.dtype]
  assert(worst <= tol * math.max(scale, 1e-300), string.format(
    "element %d is off by %.3g, %.3g of the largest modulus %.6g (tolerance %g): got %s, NumPy %s", at, worst,
    worst / math.max(scale, 1e-300), scale, tol, tostring(part(g[at], 1)) .. "," .. tostring(part(g[at], 2)),
    tostring(part(want.values[at], 1)) .. "," .. tostring(part(want.values[at], 2))))
end

-- as support.suite, with check() as the comparison: case(name, function() return <hl array> end,
-- "<NumPy expression of a, b, ...>", {inputs}, {dtype = halua's dtype [, tol]})
local function fft_suite(title, build)
  describe(title, function()
    local batch, checks = np.batch(), {}
    local function case(name, got, expr, inputs, opts)
      assert(opts and opts.dtype, "case " .. name .. " names no dtype")
      checks[#checks + 1] = {name = name, got = got, want = batch:add(expr, inputs), opts = opts}
    end
    build(case)
    setup(function() batch:run() end)
    for _, c in ipairs(checks) do
      it(c.name, function() check(c.got(), c.want(), c.opts) end)
    end
  end)
end

local CDT = {float32 = "complex64", float64 = "complex128"}
local RDT = {complex64 = "float32", complex128 = "float64"}

-- lengths of every kernel: 1; radices 4 and 2, 3, 5, 7, their products; 31, the largest odd
-- radix; 37, 97, 101 and 257, primes past it (Bluestein); 1000 = 2^3 5^3 and 1024 = 4^5
local LENGTHS = {1, 2, 3, 5, 7, 8, 12, 16, 30, 31, 37, 97, 101, 257, 1000, 1024}

fft_suite("hl.fft over lengths of every kernel, against NumPy", function(case)
  for _, n in ipairs(LENGTHS) do
    for _, cdt in ipairs {"complex128", "complex64"} do
      local z = crand({n}, cdt)
      case(string.format("fft of %s[%d]", cdt, n), function() return F.fft(z) end, "np.fft.fft(a)", {z}, {dtype = cdt})
      case(string.format("ifft of %s[%d]", cdt, n), function() return F.ifft(z) end, "np.fft.ifft(a)", {z}, {dtype = cdt})
      local rdt = RDT[cdt]
      local x = rand({n}, rdt)
      case(string.format("rfft of %s[%d]", rdt, n), function() return F.rfft(x) end, "np.fft.rfft(a)", {x}, {dtype = cdt})
      local h = crand({math.floor(n / 2) + 1}, cdt)
      case(string.format("irfft of %s[%d] to %d values", cdt, h.size, n), function() return F.irfft(h, n) end,
           string.format("np.fft.irfft(a, %d)", n), {h}, {dtype = rdt})
    end
  end
  -- many lanes: spread over the engine's threads (past 16K values), along the last axis and along
  -- the first, whose lanes are strided
  local zl = crand({48, 384}, "complex128")
  case("fft of 48 lanes of 384 values", function() return F.fft(zl) end, "np.fft.fft(a)", {zl}, {dtype = "complex128"})
  case("fft of 384 lanes of 48 values along axis 1", function() return F.fft(zl, nil, 1) end, "np.fft.fft(a, axis=0)", {zl},
       {dtype = "complex128"})
  local zb = crand({40, 257}, "complex64")
  case("ifft of 40 lanes of 257 values (Bluestein)", function() return F.ifft(zb) end, "np.fft.ifft(a)", {zb}, {dtype = "complex64"})
end)

fft_suite("hfft and ihfft (a Hermitian signal's transforms) against NumPy", function(case)
  for _, n in ipairs({1, 2, 5, 8, 9, 37}) do
    for _, cdt in ipairs {"complex128", "complex64"} do
      local rdt = RDT[cdt]
      local h = crand({math.floor(n / 2) + 1}, cdt)
      for _, norm in ipairs {false, "backward", "ortho", "forward"} do
        local nm = norm or nil
        case(string.format("hfft of %s[%d] to %d values, norm %s", cdt, h.size, n, tostring(norm)),
             function() return F.hfft(h, n, nil, nm) end, string.format("np.fft.hfft(a, %d, norm=%s)", n, pynorm(nm)), {h},
             {dtype = rdt})
        local x = rand({n}, rdt)
        case(string.format("ihfft of %s[%d], norm %s", rdt, n, tostring(norm)), function() return F.ihfft(x, nil, nil, nm) end,
             string.format("np.fft.ihfft(a, norm=%s)", pynorm(nm)), {x}, {dtype = cdt})
      end
    end
  end
  local z = crand({3, 4, 5}, "complex128")
  case("hfft along axis 2 with the length inferred", function() return F.hfft(z, nil, 2) end, "np.fft.hfft(a, axis=1)", {z},
       {dtype = "float64"})
  local x = rand({4, 6}, "float32")
  case("ihfft along axis 1, n = 5 (cropped), as an options table", function() return F.ihfft(x, {n = 5, axis = 1}) end,
       "np.fft.ihfft(a, 5, axis=0)", {x}, {dtype = "complex64"})
  local xi = hl.array({{3, 1, 4, 1}, {5, 9, 2, 6}}, "int32")
  case("ihfft of int32 gives complex64", function() return F.ihfft(xi) end, "np.fft.ihfft(a)", {xi}, {dtype = "complex64"})
  case("hfft under jit", function() return hl.jit(function(u) return F.hfft(u, 7, -1, "ortho") end)(z) end,
       "np.fft.hfft(a, 7, norm='ortho')", {z}, {dtype = "float64"})
end)

-- Long transforms go through .npy files (a table of 65537 complex values is no Lua constant):
-- NumPy gives the largest error relative to the largest modulus of its result.
describe("long transforms against NumPy", function()
  it("2^16 and 65537 points (a Bluestein length), float32 and float64, fft, ifft and rfft", function()
    local key = hl.random.key(7)
    local runs, script = {}, {"import numpy as np"}
    for _, n in ipairs {65536, 65537} do
      for _, dt in ipairs {"float32", "float64"} do
        key = hl.random.fold_in(key, n)
        local ks = hl.random.split(key, 2)
        local k1, k2 = ks[1], ks[2]
        local re, im = hl.random.uniform(k1, {n}, dt, -1, 1), hl.random.uniform(k2, {n}, dt, -1, 1)
        local z = hl.complex(re, im)
        for _, c in ipairs {{"fft", z, F.fft(z)}, {"ifft", z, F.ifft(z)}, {"rfft", re, F.rfft(re)}} do
          local i = #runs + 1
          local xp, yp = os.tmpname(), os.tmpname()
          hl.save(xp .. ".npy", c[2])
          hl.save(yp .. ".npy", c[3])
          runs[i] = {name = string.format("%s of %s[%d]", c[1], dt, n), dtype = c[3].dtype, tol = TOL[c[3].dtype], files = {xp, yp}}
          script[#script + 1] = string.format(
            "w = np.fft.%s(np.load(%q)); y = np.load(%q); print(y.dtype, np.max(np.abs(y - w)) / np.max(np.abs(w)))",
            c[1], xp .. ".npy", yp .. ".npy")
        end
      end
    end
    local py = os.tmpname()
    local f = assert(io.open(py, "w"))
    f:write(table.concat(script, "\n"), "\n")
    f:close()
    local p = assert(io.popen((os.getenv("HALUA_NUMPY_PYTHON") or "/usr/bin/python3") .. " " .. py))
    local out = p:read("*a")
    p:close()
    os.remove(py)
    local i = 0
    for dtype, e in out:gmatch("(%S+) (%S+)\n") do
      i = i + 1
      local r = runs[i]
      assert.are.equal(r.dtype, dtype, r.name .. ": the saved dtype")
      assert(tonumber(e) <= r.tol, string.format("%s: relative error %s past %g", r.name, e, r.tol))
    end
    assert.are.equal(#runs, i, "NumPy answered " .. i .. " of " .. #runs .. " comparisons: " .. out)
    for _, r in ipairs(runs) do
      for _, fp in ipairs(r.files) do
        os.remove(fp)
        os.remove(fp .. ".npy")
      end
    end
  end)
end)

fft_suite("dtypes", function(case)
  local xi = hl.array({3, -1, 4, 1, -5, 9, 2}, "int32")
  local x16 = rand({6}, "float16")
  local x32, x64 = rand({6}, "float32"), rand({6}, "float64")
  local z64, z128 = crand({6}, "complex64"), crand({6}, "complex128")
  local xb = hl.array({true, false, true, true}, "bool")
  case("fft of int32 gives complex64", function() return F.fft(xi) end, "np.fft.fft(a)", {xi}, {dtype = "complex64"})
  case("fft of int64 gives complex64", function() return F.fft(xi:astype("int64")) end, "np.fft.fft(a)", {xi}, {dtype = "complex64"})
  case("fft of bool gives complex64", function() return F.fft(xb) end, "np.fft.fft(a)", {xb}, {dtype = "complex64"})
  case("fft of float16 gives complex64", function() return F.fft(x16) end, "np.fft.fft(a)", {x16}, {dtype = "complex64"})
  case("fft of float32 gives complex64", function() return F.fft(x32) end, "np.fft.fft(a)", {x32}, {dtype = "complex64"})
  case("fft of float64 gives complex128", function() return F.fft(x64) end, "np.fft.fft(a)", {x64}, {dtype = "complex128"})
  case("fft of complex64 stays complex64", function() return F.fft(z64) end, "np.fft.fft(a)", {z64}, {dtype = "complex64"})
  case("ifft of complex128 stays complex128", function() return F.ifft(z128) end, "np.fft.ifft(a)", {z128}, {dtype = "complex128"})
  case("ifft of float32 gives complex64", function() return F.ifft(x32) end, "np.fft.ifft(a)", {x32}, {dtype = "complex64"})
  case("ifft of int32 gives complex64", function() return F.ifft(xi) end, "np.fft.ifft(a)", {xi}, {dtype = "complex64"})
  case("rfft of int32 gives complex64", function() return F.rfft(xi) end, "np.fft.rfft(a)", {xi}, {dtype = "complex64"})
  case("rfft of float16 gives complex64", function() return F.rfft(x16) end, "np.fft.rfft(a)", {x16}, {dtype = "complex64"})
  case("rfft of float64 gives complex128", function() return F.rfft(x64) end, "np.fft.rfft(a)", {x64}, {dtype = "complex128"})
  case("irfft of complex64 gives float32", function() return F.irfft(z64) end, "np.fft.irfft(a)", {z64}, {dtype = "float32"})
  case("irfft of complex128 gives float64", function() return F.irfft(z128, 11) end, "np.fft.irfft(a, 11)", {z128}, {dtype = "float64"})
  case("irfft of a real float64 array gives float64", function() return F.irfft(x64) end, "np.fft.irfft(a)", {x64}, {dtype = "float64"})
  case("irfft of int32 gives float32", function() return F.irfft(xi) end, "np.fft.irfft(a)", {xi}, {dtype = "float32"})
  local m16, mi = rand({3, 4}, "float16"), hl.reshape(hl.arange(12, "int32"), {3, 4})
  case("fft2 of int32 gives complex64", function() return F.fft2(mi) end, "np.fft.fft2(a)", {mi}, {dtype = "complex64"})
  case("rfftn of float16 gives complex64", function() return F.rfftn(m16) end, "np.fft.rfftn(a)", {m16}, {dtype = "complex64"})
  local c34 = crand({3, 4}, "complex64")
  case("irfftn of complex64 gives float32", function() return F.irfftn(c34) end, "np.fft.irfftn(a)", {c34}, {dtype = "float32"})
end)

fft_suite("norm modes: backward (the default), ortho, forward; positional and as an option", function(case)
  local z = crand({4, 6}, "complex128")
  local x = rand({4, 6}, "float64")
  local h = crand({4, 4}, "complex128")
  local z3, x3, h3 = crand({3, 4, 5}, "complex128"), rand({3, 4, 5}, "float64"), crand({3, 4, 5}, "complex128")
  for _, norm in ipairs {false, "backward", "ortho", "forward"} do
    norm = norm or nil
    local tag = " norm " .. tostring(norm)
    for _, c in ipairs {{"fft", z, "complex128"}, {"ifft", z, "complex128"}, {"rfft", x, "complex128"}, {"irfft", h, "float64"}} do
      local fn, input, dt = F[c[1]], c[2], c[3]
      local expr = string.format("np.fft.%s(a, norm=%s)", c[1], pynorm(norm))
      case(c[1] .. tag, function() return fn(input, nil, nil, norm) end, expr, {input}, {dtype = dt})
      if norm then case(c[1] .. tag .. " as an option", function() return fn(input, {norm = norm}) end, expr, {input}, {dtype = dt}) end
    end
    for _, c in ipairs {{"fft2", z3, "complex128"}, {"ifft2", z3, "complex128"}, {"fftn", z3, "complex128"},
                        {"ifftn", z3, "complex128"}, {"rfft2", x3, "complex128"}, {"rfftn", x3, "complex128"},
                        {"irfft2", h3, "float64"}, {"irfftn", h3, "float64"}} do
      local fn, input, dt = F[c[1]], c[2], c[3]
      local expr = string.format("np.fft.%s(a, norm=%s)", c[1], pynorm(norm))
      case(c[1] .. tag, function() return fn(input, nil, nil, norm) end, expr, {input}, {dtype = dt})
      if norm then case(c[1] .. tag .. " as an option", function() return fn(input, {norm = norm}) end, expr, {input}, {dtype = dt}) end
    end
  end
  -- float32 too: the scaling keeps the dtype
  local z32 = crand({10}, "complex64")
  case("ifft of complex64 norm ortho", function() return F.ifft(z32, nil, nil, "ortho") end, "np.fft.ifft(a, norm='ortho')",
       {z32}, {dtype = "complex64"})
  case("irfft of complex64 norm forward", function() return F.irfft(z32, 15, nil, "forward") end,
       "np.fft.irfft(a, 15, norm='forward')", {z32}, {dtype = "float32"})
end)

fft_suite("n and s: cropping and zero-padding", function(case)
  local z, x = crand({8}, "complex128"), rand({8}, "float64")
  local h = crand({5}, "complex128")
  for _, n in ipairs {1, 3, 5, 8, 11, 12, 16} do
    case("fft n " .. n .. " of 8 values", function() return F.fft(z, n) end, "np.fft.fft(a, " .. n .. ")", {z}, {dtype = "complex128"})
    case("ifft n " .. n .. " of 8 values", function() return F.ifft(z, n) end, "np.fft.ifft(a, " .. n .. ")", {z}, {dtype = "complex128"})
    case("rfft n " .. n .. " of 8 values", function() return F.rfft(x, n) end, "np.fft.rfft(a, " .. n .. ")", {x}, {dtype = "complex128"})
    -- irfft of 5 values: n 8 uses them all, less crops, more pads
    case("irfft n " .. n .. " of 5 values", function() return F.irfft(h, n) end, "np.fft.irfft(a, " .. n .. ")", {h}, {dtype = "float64"})
  end
  case("irfft of 5 values infers n 8", function() return F.irfft(h) end, "np.fft.irfft(a)", {h}, {dtype = "float64"})
  case("irfft n 9 of 5 values (odd: no Nyquist value)", function() return F.irfft(h, 9) end, "np.fft.irfft(a, 9)", {h}, {dtype = "float64"})
  local z2 = crand({3, 8}, "complex128")
  case("fft n 5 along axis 1 pads 3 rows", function() return F.fft(z2, 5, 1) end, "np.fft.fft(a, 5, axis=0)", {z2}, {dtype = "complex128"})
  case("fft n 2 along axis 1 crops", function() return F.fft(z2, 2, 1) end, "np.fft.fft(a, 2, axis=0)", {z2}, {dtype = "complex128"})
  case("n and norm as options after n", function() return F.fft(z2, 6, {norm = "ortho"}) end, "np.fft.fft(a, 6, norm='ortho')",
       {z2}, {dtype = "complex128"})
  case("n, axis and norm as options", function() return F.ifft(z2, {n = 4, axis = 1, norm = "forward"}) end,
       "np.fft.ifft(a, 4, axis=0, norm='forward')", {z2}, {dtype = "complex128"})
  local r38 = rand({3, 8})
  case("rfft with norm as an option after n and axis", function() return F.rfft(r38, 5, 2, {norm = "ortho"}) end,
       "np.fft.rfft(a, 5, axis=1, norm='ortho')", {r38}, {dtype = "complex128"})
  local m, mz = rand({4, 5}, "float64"), crand({4, 5}, "complex128")
  local t, tz = rand({3, 4, 5}, "float64"), crand({3, 4, 5}, "complex128")
  local s_cases = {
    {"fft2", mz, {3, 7}, nil, "complex128"}, {"ifft2", mz, {6, 2}, nil, "complex128"},
    {"fftn", tz, {2, 6}, nil, "complex128"}, {"fftn", tz, {4, 3, 6}, nil, "complex128"},
    {"fftn", tz, {5, 2}, {1, 3}, "complex128"}, {"ifftn", tz, {2, 2, 2}, nil, "complex128"},
    {"ifftn", tz, {1, 7}, {-1, 2}, "complex128"},
    {"rfft2", m, {6, 4}, nil, "complex128"}, {"rfft2", m, {3, 9}, nil, "complex128"},
    {"rfftn", t, {2, 3, 7}, nil, "complex128"}, {"rfftn", t, {4, 9}, {1, 3}, "complex128"},
    {"rfftn", t, {6}, nil, "complex128"},
    {"irfft2", mz, {3, 7}, nil, "float64"}, {"irfft2", mz, {5, 12}, nil, "float64"},
    {"irfftn", tz, {3, 4, 9}, nil, "float64"}, {"irfftn", tz, {2, 5}, {1, 2}, "float64"},
    {"irfftn", tz, {1}, nil, "float64"},
    {"fft2", tz, {2, 6}, nil, "complex128"}, {"rfft2", t, {3, 8}, nil, "complex128"}, {"irfft2", tz, {2, 5}, nil, "float64"},
  }
  for _, c in ipairs(s_cases) do
    local fn, input, s, axes, dt = F[c[1]], c[2], c[3], c[4], c[5]
    local expr = string.format("np.fft.%s(a, s=%s%s)", c[1], pytuple(s), axes and ", axes=" .. pyaxes(axes) or "")
    case(string.format("%s of %s s %s%s", c[1], dims(input.shape), dims(s), axes and " axes " .. dims(axes) or ""),
         function() return fn(input, s, axes) end, expr, {input}, {dtype = dt})
  end
  case("fftn with s, axes and norm as options", function() return F.fftn(tz, {s = {2, 6}, axes = {1, 3}, norm = "forward"}) end,
       "np.fft.fftn(a, s=(2,6), axes=(0,2), norm='forward')", {tz}, {dtype = "complex128"})
  case("irfftn with s and norm as options after axes", function() return F.irfftn(tz, {3, 6}, {2, 3}, {norm = "ortho"}) end,
       "np.fft.irfftn(a, s=(3,6), axes=(1,2), norm='ortho')", {tz}, {dtype = "float64"})
end)

fft_suite("axes: positive, negative, a middle one; non-contiguous inputs", function(case)
  local tz, t = crand({3, 4, 5}, "complex128"), rand({3, 4, 5}, "float64")
  for _, axis in ipairs {1, 2, 3, -1, -2, -3} do
    local a = pyaxis(axis)
    case("fft axis " .. axis .. " of [3,4,5]", function() return F.fft(tz, nil, axis) end,
         "np.fft.fft(a, axis=" .. a .. ")", {tz}, {dtype = "complex128"})
    case("ifft axis " .. axis .. " of [3,4,5]", function() return F.ifft(tz, nil, axis) end,
         "np.fft.ifft(a, axis=" .. a .. ")", {tz}, {dtype = "complex128"})
    case("rfft axis " .. axis .. " of [3,4,5]", function() return F.rfft(t, nil, axis) end,
         "np.fft.rfft(a, axis=" .. a .. ")", {t}, {dtype = "complex128"})
    case("irfft n 7 axis " .. axis .. " of [3,4,5]", function() return F.irfft(tz, 7, axis) end,
         "np.fft.irfft(a, 7, axis=" .. a .. ")", {tz}, {dtype = "float64"})
  end
  local axes_cases = {
    {"fftn", tz, {2}}, {"fftn", tz, {-1, 1}}, {"fftn", tz, {3, 2, 1}}, {"ifftn", tz, {2, -1}},
    {"fft2", tz, {1, 3}}, {"ifft2", tz, {-3, -2}},
    {"rfftn", t, {3, 1}}, {"rfftn", t, {1, 3}}, {"rfftn", t, {2}}, {"rfft2", t, {-1, -3}}, {"rfft2", t, {3, 2}},
    {"irfftn", tz, {3, 1}}, {"irfftn", tz, {1, 2}}, {"irfft2", tz, {1, 2}}, {"irfft2", tz, {-1, -2}},
  }
  for _, c in ipairs(axes_cases) do
    local fn, input, axes = F[c[1]], c[2], c[3]
    case(string.format("%s of [3,4,5] axes %s", c[1], dims(axes)), function() return fn(input, nil, axes) end,
         string.format("np.fft.%s(a, axes=%s)", c[1], pyaxes(axes)), {input}, {dtype = c[1]:match("^irfft") and "float64" or "complex128"})
  end
  case("fftn with one axis given as a number", function() return F.fftn(tz, nil, 2) end, "np.fft.fftn(a, axes=(1,))", {tz},
       {dtype = "complex128"})
  case("irfftn with one axis given as a number", function() return F.irfftn(tz, nil, -2) end, "np.fft.irfftn(a, axes=(-2,))", {tz},
       {dtype = "float64"})
  -- inputs that are views: transposed, sliced with a step, a broadcast row (stride 0)
  local x = rand({4, 6}, "float64")
  local xt = hl.transpose(x)
  case("fft of a transposed array along axis 1", function() return F.fft(xt, nil, 1) end, "np.fft.fft(a, axis=0)", {xt},
       {dtype = "complex128"})
  case("rfft of a transposed array along axis 2", function() return F.rfft(xt) end, "np.fft.rfft(a)", {xt}, {dtype = "complex128"})
  local zt = hl.transpose(tz, {3, 1, 2})
  case("fftn of a permuted complex array", function() return F.fftn(zt) end, "np.fft.fftn(a)", {zt}, {dtype = "complex128"})
  case("ifft of a permuted complex array along its middle axis", function() return F.ifft(zt, nil, 2) end,
       "np.fft.ifft(a, axis=1)", {zt}, {dtype = "complex128"})
  local big = rand({9, 10}, "float64")
  local sl = big[{{1, 9, 2}, {2, 10, 3}}]
  case("fft of a sliced array (steps 2 and 3)", function() return F.fft(sl) end, "np.fft.fft(a)", {sl}, {dtype = "complex128"})
  case("fft2 of a sliced array", function() return F.fft2(sl) end, "np.fft.fft2(a)", {sl}, {dtype = "complex128"})
  local col = big[{{}, 4}]
  case("rfft of a column", function() return F.rfft(col) end, "np.fft.rfft(a)", {col}, {dtype = "complex128"})
  local zs = crand({6, 8}, "complex64")[{{2, 6, 2}, {1, 8, 3}}]
  case("fft of a sliced complex64 array along axis 1", function() return F.fft(zs, nil, 1) end, "np.fft.fft(a, axis=0)", {zs},
       {dtype = "complex64"})
  local row = hl.broadcast_to(rand({8}, "float32"), {3, 8})
  case("fft of a broadcast row", function() return F.fft(row) end, "np.fft.fft(a)", {row}, {dtype = "complex64"})
  case("irfft of a broadcast row", function() return F.irfft(row) end, "np.fft.irfft(a)", {row}, {dtype = "float32"})
end)

fft_suite("fftfreq and rfftfreq", function(case)
  for _, n in ipairs {1, 2, 5, 8, 9, 16} do
    case("fftfreq " .. n, function() return F.fftfreq(n) end, "np.fft.fftfreq(" .. n .. ")", {}, {dtype = "float32"})
    case("rfftfreq " .. n, function() return F.rfftfreq(n) end, "np.fft.rfftfreq(" .. n .. ")", {}, {dtype = "float32"})
    case("fftfreq " .. n .. " d 0.1 float64", function() return F.fftfreq(n, 0.1, "float64") end,
         "np.fft.fftfreq(" .. n .. ", 0.1)", {}, {dtype = "float64"})
    case("rfftfreq " .. n .. " d 0.1 float64", function() return F.rfftfreq(n, 0.1, "float64") end,
         "np.fft.rfftfreq(" .. n .. ", 0.1)", {}, {dtype = "float64"})
  end
  case("fftfreq with d and dtype as options", function() return F.fftfreq(7, {d = 2.5, dtype = "float64"}) end,
       "np.fft.fftfreq(7, 2.5)", {}, {dtype = "float64"})
  case("rfftfreq with only dtype as an option", function() return F.rfftfreq(7, {dtype = "float64"}) end,
       "np.fft.rfftfreq(7)", {}, {dtype = "float64"})
  case("fftfreq with a negative d", function() return F.fftfreq(6, -0.5) end, "np.fft.fftfreq(6, -0.5)", {}, {dtype = "float32"})
  case("fftfreq with the dtype alone", function() return F.fftfreq(4, nil, "float64") end, "np.fft.fftfreq(4)", {}, {dtype = "float64"})
end)

fft_suite("fftshift and ifftshift", function(case)
  for _, n in ipairs {1, 2, 5, 6} do
    local v = hl.arange(n, "float32")
    case("fftshift of " .. n .. " values", function() return F.fftshift(v) end, "np.fft.fftshift(a)", {v}, {dtype = "float32", tol = 0})
    case("ifftshift of " .. n .. " values", function() return F.ifftshift(v) end, "np.fft.ifftshift(a)", {v}, {dtype = "float32", tol = 0})
  end
  local m = hl.reshape(hl.arange(35, "int32"), {5, 7})
  case("fftshift of [5,7] over every axis", function() return F.fftshift(m) end, "np.fft.fftshift(a)", {m}, {dtype = "int32", tol = 0})
  case("ifftshift of [5,7] over every axis", function() return F.ifftshift(m) end, "np.fft.ifftshift(a)", {m}, {dtype = "int32", tol = 0})
  case("fftshift axis 1 as a number", function() return F.fftshift(m, 1) end, "np.fft.fftshift(a, axes=0)", {m}, {dtype = "int32", tol = 0})
  case("ifftshift axes {-1}", function() return F.ifftshift(m, {-1}) end, "np.fft.ifftshift(a, axes=(-1,))", {m}, {dtype = "int32", tol = 0})
  case("fftshift no axes", function() return F.fftshift(m, {}) end, "np.fft.fftshift(a, axes=())", {m}, {dtype = "int32", tol = 0})
  local t = crand({4, 3, 5}, "complex128")
  case("fftshift of complex [4,3,5] axes {3, 1}", function() return F.fftshift(t, {3, 1}) end, "np.fft.fftshift(a, axes=(2,0))", {t},
       {dtype = "complex128", tol = 0})
  case("ifftshift of complex [4,3,5] middle axis", function() return F.ifftshift(t, 2) end, "np.fft.ifftshift(a, axes=1)", {t},
       {dtype = "complex128", tol = 0})
  local f = F.fftfreq(9, 0.5, "float64")
  case("fftshift of fftfreq sorts the frequencies", function() return F.fftshift(f) end, "np.fft.fftshift(np.fft.fftfreq(9, 0.5))", {},
       {dtype = "float64"})
end)

local function max_abs(x) return hl.max(hl.abs(x)):item() end
-- got within tol times the largest modulus of want (arrays of one shape)
local function close(got, want, tol, what)
  assert(dims(got.shape) == dims(want.shape), what .. ": shape " .. dims(got.shape) .. ", expected " .. dims(want.shape))
  assert(got.dtype == want.dtype, what .. ": dtype " .. got.dtype .. ", expected " .. want.dtype)
  local e, s = max_abs(got - want), max_abs(want)
  assert(e <= tol * math.max(s, 1e-300), string.format("%s: off by %.3g, %.3g of the largest modulus %.6g (tolerance %g)",
                                                      what, e, e / math.max(s, 1e-300), s, tol))
end

describe("identities", function()
  it("ifft(fft(z)) is z, in every norm mode, for lengths of each kernel", function()
    for _, n in ipairs {1, 2, 7, 8, 31, 37, 100, 257} do
      for _, dt in ipairs {"complex128", "complex64"} do
        local z = crand({3, n}, dt)
        for _, norm in ipairs {"backward", "ortho", "forward"} do
          close(F.ifft(F.fft(z, nil, nil, norm), nil, nil, norm), z, TOL[dt], dt .. " n " .. n .. " " .. norm)
        end
        close(F.fft(F.ifft(z)), z, TOL[dt], dt .. " n " .. n .. " fft(ifft)")
      end
    end
  end)
  it("irfft(rfft(x), n) is x for odd and even n", function()
    for _, n in ipairs {1, 2, 3, 7, 8, 31, 37, 64, 101} do
      for _, dt in ipairs {"float64", "float32"} do
        local x = rand({2, n}, dt)
        close(F.irfft(F.rfft(x), n), x, TOL[dt], dt .. " n " .. n)
        close(F.irfft(F.rfft(x, nil, nil, "ortho"), n, nil, "ortho"), x, TOL[dt], dt .. " n " .. n .. " ortho")
      end
    end
    local x = rand({3, 5, 7})
    close(F.irfftn(F.rfftn(x), x.shape), x, 1e-14, "irfftn(rfftn) [3,5,7]")
    close(F.irfft2(F.rfft2(x, nil, {1, 2}), {3, 5}, {1, 2}), x, 1e-14, "irfft2(rfft2) over axes 1 and 2")
    local z = crand({4, 3, 6})
    close(F.ifftn(F.fftn(z)), z, 1e-14, "ifftn(fftn)")
  end)
  it("keeps Parseval's sum: |X|^2 sums to n sum |x|^2 (backward), sum |x|^2 (ortho), sum |x|^2 / n (forward)", function()
    for _, n in ipairs {12, 37, 64} do
      local z = crand({n})
      local e = hl.sum(hl.square(hl.abs(z))):item()
      local want = {backward = n * e, ortho = e, forward = e / n}
      for norm, w in pairs(want) do
        local got = hl.sum(hl.square(hl.abs(F.fft(z, nil, nil, norm)))):item()
        assert(math.abs(got - w) <= 1e-13 * w, string.format("n %d %s: %.17g, expected %.17g", n, norm, got, w))
      end
      local x = rand({n})
      local X = F.rfft(x, nil, nil, "ortho")
      -- the half spectrum counts its conjugate half twice (not X[0], nor X[n / 2] for even n)
      local a = hl.square(hl.abs(X))
      local twice = n % 2 == 0 and hl.sum(a[{{2, n / 2}}]):item() or hl.sum(a[{{2, (n + 1) / 2}}]):item()
      local got = a[1]:item() + 2 * twice + (n % 2 == 0 and a[n / 2 + 1]:item() or 0)
      local w = hl.sum(hl.square(x)):item()
      assert(math.abs(got - w) <= 1e-13 * w, string.format("rfft n %d: %.17g, expected %.17g", n, got, w))
    end
  end)
  it("is linear", function()
    local x, y = crand({2, 30}), crand({2, 30})
    local a, b = hl.complex(2.5, -1):astype("complex128"), hl.complex(-0.5, 3):astype("complex128")
    close(F.fft(a * x + b * y), a * F.fft(x) + b * F.fft(y), 1e-14, "fft")
    close(F.ifft2(a * x - y), a * F.ifft2(x) - F.ifft2(y), 1e-14, "ifft2")
    local u, v = rand({40}), rand({40})
    close(F.rfft(3 * u - 2 * v), 3 * F.rfft(u) - 2 * F.rfft(v), 1e-14, "rfft")
  end)
  it("transforms a shifted impulse to exp(-2 pi i j k / n), and back to exp(2 pi i j k / n) / n", function()
    for _, c in ipairs {{12, 5}, {37, 3}, {16, 0}, {7, 6}} do
      local n, k = c[1], c[2]
      local e = {}
      for j = 1, n do e[j] = j == k + 1 and 1 or 0 end
      local x = hl.array(e, "float64")
      local re, im, ire, iim = {}, {}, {}, {}
      for j = 0, n - 1 do
        local t = 2 * math.pi * ((j * k) % n) / n
        re[j + 1], im[j + 1] = math.cos(t), -math.sin(t)
        ire[j + 1], iim[j + 1] = math.cos(t) / n, math.sin(t) / n
      end
      close(F.fft(x), hl.complex(hl.array(re, "float64"), hl.array(im, "float64")), 1e-14, "fft of e_" .. k .. " n " .. n)
      close(F.ifft(x), hl.complex(hl.array(ire, "float64"), hl.array(iim, "float64")), 1e-14, "ifft of e_" .. k .. " n " .. n)
    end
  end)
  it("gives Hermitian spectra for real input, of which rfft is the first half", function()
    for _, n in ipairs {9, 10} do
      local x = rand({n})
      local X = F.fft(x)
      local h = math.floor(n / 2) + 1
      close(F.rfft(x), X[{{1, h}}], 1e-15, "rfft n " .. n)
      -- X[n - k] = conj(X[k]) for k = 1 .. n - 1
      close(hl.flip(X[{{2, n}}], 1), hl.conj(X[{{2, n}}]), 1e-14, "Hermitian n " .. n)
    end
  end)
  it("does many axes one after another", function()
    local z = crand({3, 4, 5})
    close(F.fft2(z), F.fft(F.fft(z, nil, 2), nil, 3), 1e-15, "fft2")
    close(F.fftn(z), F.fft(F.fft(F.fft(z, nil, 1), nil, 2), nil, 3), 1e-15, "fftn")
    local x = rand({3, 4, 5})
    close(F.rfftn(x), F.fft(F.fft(F.rfft(x), nil, 1), nil, 2), 1e-15, "rfftn")
  end)
  it("fftshift and ifftshift undo each other, for odd and even lengths", function()
    for _, shape in ipairs {{5}, {6}, {5, 6}, {3, 4, 7}} do
      local x = rand(shape)
      close(F.ifftshift(F.fftshift(x)), x, 0, "ifftshift(fftshift) " .. dims(shape))
      close(F.fftshift(F.ifftshift(x)), x, 0, "fftshift(ifftshift) " .. dims(shape))
      close(F.ifftshift(F.fftshift(x, {-1}), -1), x, 0, "over the last axis " .. dims(shape))
    end
    -- the frequencies in increasing order, zero in the middle
    assert.are.same({-3, -2, -1, 0, 1, 2}, F.fftshift(F.fftfreq(6, 1 / 6, "float64")):totable())
    assert.are.same({-2, -1, 0, 1, 2}, F.fftshift(F.fftfreq(5, 0.2, "float64")):totable())
  end)
  it("fftshift leaves the caller's axes list as it was", function()
    local axes = {-1, 1}
    F.fftshift(rand({3, 4}), axes)
    F.ifftshift(rand({3, 4}), axes)
    assert.are.same({-1, 1}, axes)
  end)
  it("transforms strided real views of one rank but new shapes (their cast to complex is a shape-generic kernel)", function()
    -- the first view's shape must not be baked into the kernel the second one reuses
    local big = rand({9, 10})
    local sl = big[{{1, 9, 2}, {2, 10, 3}}]   -- [5, 3], strides [20, 3]
    local tr = hl.transpose(rand({4, 6}))     -- [6, 4], strides [1, 6]
    for _, x in ipairs {sl, tr, hl.transpose(rand({8, 10}))} do
      local dense = hl.array(x:totable(), "float64")
      close(x:astype("complex128"), dense:astype("complex128"), 0, "cast of " .. dims(x.shape))
      close(F.fft(x), F.fft(dense), 0, "fft of " .. dims(x.shape))
      close(F.rfft(x, nil, 1), F.rfft(dense, nil, 1), 0, "rfft of " .. dims(x.shape))
    end
  end)
end)

fft_suite("under hl.jit, against NumPy", function(case)
  local z, x = crand({5, 12}), rand({5, 12})
  local x32, h = rand({4, 10}, "float32"), crand({3, 5})
  local z3, x3 = crand({3, 4, 6}), rand({3, 4, 6})
  local xi = hl.array({3, -1, 4, 1, -5, 9, 2, 6}, "int32")
  local jits = {
    {"fft", function(u) return F.fft(u) end, "np.fft.fft(a)", z, "complex128"},
    {"ifft along axis 1", function(u) return F.ifft(u, nil, 1) end, "np.fft.ifft(a, axis=0)", z, "complex128"},
    {"fft of a Bluestein length", function(u) return F.fft(u, 37) end, "np.fft.fft(a, 37)", z, "complex128"},
    {"rfft n 10 of float32", function(u) return F.rfft(u, 10) end, "np.fft.rfft(a, 10)", x32, "complex64"},
    {"irfft n 9", function(u) return F.irfft(u, 9) end, "np.fft.irfft(a, 9)", h, "float64"},
    {"fft of int32", function(u) return F.fft(u) end, "np.fft.fft(a)", xi, "complex64"},
    {"fft2 ortho", function(u) return F.fft2(u, nil, nil, "ortho") end, "np.fft.fft2(a, norm='ortho')", z3, "complex128"},
    {"fftn with s padding and cropping", function(u) return F.fftn(u, {5, 2, 8}) end, "np.fft.fftn(a, s=(5,2,8))", z3, "complex128"},
    {"ifftn forward over axes 3 and 1", function(u) return F.ifftn(u, nil, {3, 1}, "forward") end,
     "np.fft.ifftn(a, axes=(2,0), norm='forward')", z3, "complex128"},
    {"rfftn axes {3, 1}", function(u) return F.rfftn(u, nil, {3, 1}) end, "np.fft.rfftn(a, axes=(2,0))", x3, "complex128"},
    {"irfftn s {3, 4, 7}", function(u) return F.irfftn(u, {3, 4, 7}) end, "np.fft.irfftn(a, s=(3,4,7))", z3, "float64"},
    {"irfft2 over axes 1 and 2", function(u) return F.irfft2(u, nil, {1, 2}) end, "np.fft.irfft2(a, axes=(0,1))", z3, "float64"},
    {"fftshift and ifftshift", function(u) return F.ifftshift(F.fftshift(u) * 2, 1) end,
     "np.fft.ifftshift(np.fft.fftshift(a) * 2, axes=0)", x, "float64"},
    {"fftfreq scaling an input", function(u) return u * F.fftfreq(12, 0.5, "float64") end, "a * np.fft.fftfreq(12, 0.5)", x, "float64"},
    -- the extern stage inside a fused pipeline: elementwise work before and after it
    {"fft between elementwise ops", function(u) return hl.real(F.ifft(F.fft(u * 2 + 1) * hl.exp(u))) + hl.sin(u) end,
     "np.real(np.fft.ifft(np.fft.fft(a * 2 + 1) * np.exp(a))) + np.sin(a)", x, "float64"},
    {"abs(fft)^2 summed over rows", function(u) return hl.sum(hl.square(hl.abs(F.rfft(u - hl.mean(u, 2, true)))), 1) end,
     "np.sum(np.abs(np.fft.rfft(a - a.mean(axis=1, keepdims=True)))**2, axis=0)", x, "float64"},
    {"two transforms of one input", function(u) return hl.real(F.fft(u, nil, 1)) * hl.imag(F.fft(u, nil, 2)) end,
     "np.fft.fft(a, axis=0).real * np.fft.fft(a, axis=1).imag", z, "float64"},
    -- only part of the transform used: the stage is asked for a region along the lane, of the
    -- other axes, and of one part of the pairs
    {"real part of 7 frequencies", function(u) return hl.real(F.fft(u))[{{}, {3, 9}}] end, "np.fft.fft(a).real[:, 2:9]", z, "float64"},
    {"imaginary part of a window along axis 1", function(u) return hl.imag(F.fft(u, nil, 1))[{{2, 4}, {5, 11, 3}}] end,
     "np.fft.fft(a, axis=0).imag[1:4, 4:11:3]", z, "float64"},
    {"real part of a Bluestein transform's tail", function(u) return hl.real(F.fft(u, 37))[{{2, 3}, {30, 37}}] end,
     "np.fft.fft(a, 37).real[1:3, 29:37]", z, "float64"},
    {"the last value of an rfft", function(u) return F.rfft(u)[{{}, 7}] end, "np.fft.rfft(a)[:, 6]", x, "complex128"},
  }
  for _, c in ipairs(jits) do
    case(c[1], function() return hl.jit(c[2])(c[4]) end, c[3], {c[4]}, {dtype = c[5]})
  end
  -- the pipeline's values are the eager ones (the same kernel)
  case("jit of fft is the eager fft", function() return hl.jit(function(u) return F.fft(u) end)(z) - F.fft(z) end,
       "np.zeros((5, 12), complex)", {}, {dtype = "complex128", tol = 0})
end)

-- a Lua loop over axis `axis` of each mapped input, stacked along the first axis
local function loop_of(f, inputs, in_axes)
  local n
  for i, x in ipairs(inputs) do if in_axes[i] then n = x.shape[in_axes[i]] end end
  local outs = {}
  for k = 1, n do
    local args = {}
    for i, x in ipairs(inputs) do
      if in_axes[i] then
        local idx = {}
        for a = 1, x.ndim do idx[a] = a == in_axes[i] and k or {} end
        args[i] = x[idx]
      else
        args[i] = x
      end
    end
    outs[k] = f(unpack(args))
  end
  return hl.stack(outs, 1)
end

describe("under hl.vmap", function()
  local z, x = crand({4, 8, 6}), rand({4, 8, 6})
  local cases = {
    {"fft over axis 1", function(u) return F.fft(u) end, {z}, {1}},
    {"fft over axis 2", function(u) return F.fft(u) end, {z}, {2}},
    {"fft over axis 3 (the examples' last axis is the mapped input's middle one)", function(u) return F.fft(u, nil, 1) end, {z}, {3}},
    {"ifft with n and norm over axis 2", function(u) return F.ifft(u, 10, 1, "ortho") end, {z}, {2}},
    {"rfft n 5 over axis 3", function(u) return F.rfft(u, 5, -2) end, {x}, {3}},
    {"rfft of an even length over axis 2", function(u) return F.rfft(u, nil, 1, "ortho") end, {x}, {2}},
    {"rfft n 8 over axis 1", function(u) return F.rfft(u, 8) end, {x}, {1}},
    {"irfft n 7 over axis 1", function(u) return F.irfft(u, 7) end, {z}, {1}},
    {"fft2 over axis 2", function(u) return F.fft2(u) end, {z}, {2}},
    {"rfftn with s over axis 1", function(u) return F.rfftn(u, {3, 9}) end, {x}, {1}},
    {"irfftn over axis 3", function(u) return F.irfftn(u, nil, {2, 1}) end, {z}, {3}},
    {"fftshift over axis 2", function(u) return F.fftshift(u) end, {x}, {2}},
    {"a mapped input and an unmapped one", function(u, w) return F.ifft(F.fft(u) * w) end, {z, crand({6})}, {1, false}},
    {"two inputs mapped along different axes", function(u, w) return hl.real(F.fft(u * w)) end, {z, crand({6, 4})}, {1, 2}},
  }
  for _, c in ipairs(cases) do
    it(c[1] .. " as a loop would", function()
      local in_axes = {}
      for i = 1, #c[3] do in_axes[i] = c[4][i] end
      local want = loop_of(c[2], c[3], in_axes)
      local got = hl.vmap(c[2], in_axes)(unpack(c[3]))
      close(got, want, 1e-14, "vmap")
      close(hl.jit(hl.vmap(c[2], in_axes))(unpack(c[3])), want, 1e-14, "jit of vmap")
    end)
  end
  it("maps a gradient through fft", function()
    local f = function(u) return hl.sum(hl.square(hl.abs(F.fft(u, 16)))) end
    local xs = rand({3, 12})
    local got = hl.vmap(hl.grad(f))(xs)
    close(got, loop_of(hl.grad(f), {xs}, {1}), 1e-13, "vmap of grad")
  end)
end)

-- JAX's convention for f real-valued of complex z = x + iy: grad f = df/dx - i df/dy (docs/complex.md),
-- the partials by central differences in complex128
local function numeric_cgrad(f, z)
  local eps = 1e-6
  local flat = hl.reshape(z, {z.size}):totable()
  local function at(k, dre, dim)
    local re, im = {}, {}
    for i, p in ipairs(flat) do re[i], im[i] = p[1], p[2] end
    re[k], im[k] = re[k] + dre, im[k] + dim
    return f(hl.reshape(hl.complex(hl.array(re, "float64"), hl.array(im, "float64")), z.shape)):item()
  end
  local re, im = {}, {}
  for k = 1, #flat do
    re[k] = (at(k, eps, 0) - at(k, -eps, 0)) / (2 * eps)
    im[k] = -(at(k, 0, eps) - at(k, 0, -eps)) / (2 * eps)
  end
  return hl.reshape(hl.complex(hl.array(re, "float64"), hl.array(im, "float64")), z.shape)
end
local function numeric_rgrad(f, x) return hl.reshape(hl.array(diff_check.numeric(f, x), "float64"), x.shape) end

describe("derivatives against central differences", function()
  local w7, w9 = rand({7}), rand({9})
  local losses = {
    {"sum(abs(fft(x))^2 w), x real", function(u) return hl.sum(hl.square(hl.abs(F.fft(u))) * w7) end, rand({7})},
    {"sum(abs(fft(z))^2 w), z complex", function(u) return hl.sum(hl.square(hl.abs(F.fft(u))) * w7) end, crand({7})},
    {"sum(irfft(z, 9) w), z complex (imaginary parts of z[1] ignored)", function(u) return hl.sum(F.irfft(u, 9) * w9) end, crand({5})},
    {"sum(irfft(z, 8) w), z complex (the Nyquist value's imaginary part ignored)", function(u) return hl.sum(F.irfft(u, 8) * w9[{{1, 8}}]) end,
     crand({5})},
    {"sum(irfft(x) w), x real, ortho", function(u) return hl.sum(F.irfft(u, nil, nil, "ortho") * w9[{{1, 8}}]) end, rand({5})},
    {"sum(real(rfftn(x)) w1 + imag(rfftn(x)) w2)", function(u)
      local X = F.rfftn(u)
      return hl.sum(hl.real(X) * hl.reshape(w9, {3, 3}) + hl.imag(X) * hl.reshape(hl.flip(w9, 1), {3, 3}))
    end, rand({3, 4})},
    {"sum(abs(fft2(z, ortho)) w)", function(u) return hl.sum(hl.abs(F.fft2(u, nil, nil, "ortho")) * hl.reshape(w9, {3, 3})) end, crand({3, 3})},
    {"sum(abs(ifftn(z, s)) w) with s padding one axis and cropping the other", function(u)
      return hl.sum(hl.abs(F.ifftn(u, {4, 2})) * hl.reshape(w9[{{1, 8}}], {4, 2}))
    end, crand({3, 3})},
    {"sum(abs(rfft(x, 5, forward))^2), cropped", function(u) return hl.sum(hl.square(hl.abs(F.rfft(u, 5, nil, "forward")))) end, rand({7})},
    {"sum(real(fft(x, 37)) w) of a Bluestein length", function(u) return hl.sum(hl.real(F.fft(u, 37))[{{1, 9}}] * w9) end, rand({7})},
    {"sum(hfft(z, 9) w), z complex", function(u) return hl.sum(F.hfft(u, 9) * w9) end, crand({5})},
    {"sum(abs(ihfft(x, nil, nil, ortho))^2 w), x real", function(u)
      return hl.sum(hl.square(hl.abs(F.ihfft(u, nil, nil, "ortho"))) * w9[{{1, 4}}])
    end, rand({7})},
    {"sum(fftshift(real(ifft(x))) w) along axis 1", function(u)
      return hl.sum(F.fftshift(hl.real(F.ifft(u, nil, 1)), 1) * hl.reshape(w9[{{1, 6}}], {3, 2}))
    end, crand({3, 2})},
  }
  for _, c in ipairs(losses) do
    it(c[1] .. ", eagerly and under jit", function()
      local f, x = c[2], c[3]
      local want = x.dtype == "complex128" and numeric_cgrad(f, x) or numeric_rgrad(f, x)
      close(hl.grad(f)(x), want, 1e-7, "grad")
      close(hl.jit(hl.grad(f))(x), want, 1e-7, "jit of grad")
      local v, g = hl.value_and_grad(f)(x)
      assert(math.abs(v:item() - f(x):item()) <= 1e-14 * math.abs(f(x):item()), "value_and_grad's value")
      close(g, want, 1e-7, "value_and_grad")
    end)
  end
  it("gives 2 n conj(z) for sum(abs(fft(z))^2) (Parseval) and 2 x for the ortho transform", function()
    local z = crand({2, 11})
    close(hl.grad(function(u) return hl.sum(hl.square(hl.abs(F.fft(u)))) end)(z), hl.conj(z) * 22, 1e-14, "backward")
    close(hl.grad(function(u) return hl.sum(hl.square(hl.abs(F.ifft(u, nil, 1, "ortho")))) end)(z), hl.conj(z) * 2, 1e-14, "ortho")
    local x = rand({3, 8})
    close(hl.grad(function(u) return hl.sum(hl.square(hl.abs(F.fftn(u, nil, nil, "ortho")))) end)(x), x * 2, 1e-14, "real ortho")
  end)
  it("second order: grad of grad against central differences of the gradient", function()
    local w, v = rand({6}), rand({6})
    local f = function(u) return hl.sum(hl.cos(hl.real(F.fft(u))) * w) + hl.sum(hl.square(hl.imag(F.rfft(u, 8)))) end
    local gv = function(u) return hl.sum(hl.grad(f)(u) * v) end
    local x = rand({6})
    local want = numeric_rgrad(gv, x)
    close(hl.grad(gv)(x), want, 1e-7, "grad of grad")
    close(hl.jit(hl.grad(gv))(x), want, 1e-7, "jit of grad of grad")
    -- and as a Hessian-vector product in forward mode over reverse
    local _, hv = hl.jvp(hl.grad(f), {x}, {v})
    close(hv, want, 1e-7, "jvp of grad")
  end)
end)

fft_suite("vjp and jvp against NumPy", function(case)
  local z, c = crand({10}), crand({10})
  local x, ch = rand({10}), crand({6})
  local function vjp(f, at, ct) return function() local _, back = hl.vjp(f, at) return back(ct) end end
  local function jvp(f, at, t) return function() local _, dy = hl.jvp(f, {at}, {t}) return dy end end
  -- fft and ifft are symmetric linear maps: with JAX's bilinear pairing their vjp is the map itself
  case("vjp of fft", vjp(function(u) return F.fft(u) end, z, c), "np.fft.fft(a)", {c}, {dtype = "complex128"})
  case("vjp of ifft", vjp(function(u) return F.ifft(u) end, z, c), "np.fft.ifft(a)", {c}, {dtype = "complex128"})
  case("vjp of fft ortho", vjp(function(u) return F.fft(u, nil, nil, "ortho") end, z, c), "np.fft.fft(a, norm='ortho')", {c},
       {dtype = "complex128"})
  case("vjp of fft with n 6 (cropping)", vjp(function(u) return F.fft(u, 6) end, z, c[{{1, 6}}]),
       "np.concatenate([np.fft.fft(a), np.zeros(4)])", {c[{{1, 6}}]}, {dtype = "complex128"})
  -- rfft of real x: the real part of the transposed map, the half spectrum's cotangent padded to n
  case("vjp of rfft", vjp(function(u) return F.rfft(u) end, x, ch), "np.real(np.fft.fft(a, 10))", {ch}, {dtype = "float64"})
  case("jvp of fft", jvp(function(u) return F.fft(u) end, z, c), "np.fft.fft(a)", {c}, {dtype = "complex128"})
  case("jvp of ifftn forward", jvp(function(u) return F.ifftn(u, nil, nil, "forward") end, z, c), "np.fft.ifftn(a, norm='forward')", {c},
       {dtype = "complex128"})
  case("jvp of rfft", jvp(function(u) return F.rfft(u) end, x, x * 2), "np.fft.rfft(a * 2)", {x}, {dtype = "complex128"})
  case("jvp of irfft n 10", jvp(function(u) return F.irfft(u, 10) end, ch, ch * 3), "np.fft.irfft(a * 3, 10)", {ch}, {dtype = "float64"})
  local z2, c2 = crand({3, 4}), crand({3, 4})
  case("jvp of fft2 ortho", jvp(function(u) return F.fft2(u, nil, nil, "ortho") end, z2, c2), "np.fft.fft2(a, norm='ortho')", {c2},
       {dtype = "complex128"})
  case("vjp of fft2 ortho", vjp(function(u) return F.fft2(u, nil, nil, "ortho") end, z2, c2), "np.fft.fft2(a, norm='ortho')", {c2},
       {dtype = "complex128"})
  case("vjp of fft under jit", function()
    return hl.jit(function(u, g) local _, back = hl.vjp(function(v) return F.fft(v) end, u) return back(g) end)(z, c)
  end, "np.fft.fft(a)", {c}, {dtype = "complex128"})
end)

describe("errors", function()
  local x, z = rand({3, 4}), crand({3, 4})
  local NORM = "norm must be \"backward\", \"ortho\" or \"forward\", got "
  local cases = {
    -- norm
    {"fft.fft: " .. NORM .. "bad", F.fft, x, nil, nil, "bad"},
    {"fft.irfft: " .. NORM .. "Ortho", F.irfft, z, {norm = "Ortho"}},
    {"fft.fftn: " .. NORM .. "1", F.fftn, z, nil, nil, 1},
    {"fft.irfft2: " .. NORM .. "none", F.irfft2, z, {norm = "none"}},
    -- n and s
    {"fft.fft: n must be a positive integer, got 0", F.fft, x, 0},
    {"fft.ifft: n must be a positive integer, got -1", F.ifft, x, -1},
    {"fft.rfft: n must be a positive integer, got 2.5", F.rfft, x, 2.5},
    {"fft.irfft: n must be a positive integer, got inf", F.irfft, z, math.huge},
    {"fft.fft: n must be a positive integer, got nan", F.fft, x, {n = 0 / 0}},
    {"fft.fftn: each length in s must be a positive integer, got 0", F.fftn, x, {0, 2}},
    {"fft.rfftn: each length in s must be a positive integer, got 1.5", F.rfftn, x, {2, 1.5}},
    {"fft.irfftn: each length in s must be a positive integer, got -4", F.irfftn, z, {s = {-4}}},
    {"fft.fft2: s must be a list of lengths, got number", F.fft2, x, 3},
    -- axes
    {"fft.fft: axis 3 is out of range for 2 dimensions (axes are 1-based, negative from the end)", F.fft, x, nil, 3},
    {"fft.rfft: axis 0 is out of range for 2 dimensions (axes are 1-based, negative from the end)", F.rfft, x, nil, 0},
    {"fft.ifft: axis -3 is out of range for 2 dimensions (axes are 1-based, negative from the end)", F.ifft, x, {axis = -3}},
    {"fft.fft: axis must be an integer, got 1.5", F.fft, x, nil, 1.5},
    {"fft.fftn: axis 5 is out of range for 2 dimensions (axes are 1-based, negative from the end)", F.fftn, x, nil, {1, 5}},
    {"fft.fftshift: axis 3 is out of range for 2 dimensions (axes are 1-based, negative from the end)", F.fftshift, x, {3}},
    {"fft.ifftshift: axis -3 is out of range for 2 dimensions (axes are 1-based, negative from the end)", F.ifftshift, x, -3},
    {"fft.fftn: axis 1 is repeated", F.fftn, x, nil, {1, -2}},
    {"fft.rfft2: axis 2 is repeated", F.rfft2, x, nil, {2, 2}},
    {"fft.irfftn: axis 2 is repeated", F.irfftn, z, {axes = {-1, 2}}},
    {"fft.fftn: s has 2 lengths for 1 axes", F.fftn, x, {2, 3}, {1}},
    {"fft.rfftn: s has 1 lengths for 2 axes", F.rfftn, x, {4}, {1, 2}},
    {"fft.ifft2: s has 3 lengths for 2 axes", F.ifft2, z, {s = {1, 2, 3}}},
    {"fft.fft2: s has 1 lengths for 2 axes", F.fft2, x, {3}},
    {"fft.irfft2: s has 3 lengths for 2 axes", F.irfft2, crand({2, 3, 4}), {2, 3, 4}},
    {"fft.fftn: needs at least one axis", F.fftn, x, nil, {}},
    -- options
    {"fft.fft: unknown option 'm' (the options are n, axis, norm)", F.fft, x, {m = 1}},
    {"fft.irfft: unknown option 'axes' (the options are n, axis, norm)", F.irfft, z, 4, {axes = 1}},
    {"fft.fftn: unknown option 'n' (the options are s, axes, norm)", F.fftn, x, {n = 3}},
    {"fft.rfft2: unknown option 'axis' (the options are s, axes, norm)", F.rfft2, x, {2, 2}, {axis = 1}},
    {"fft.fftfreq: unknown option 'e' (the options are d, dtype)", F.fftfreq, 4, {e = 1}},
    -- scalars, non-arrays, complex input to the real transforms
    {"fft.fft: needs at least one axis, got a scalar", F.fft, hl.array(1.5)},
    {"fft.rfft: needs at least one axis, got a scalar", F.rfft, 2},
    {"fft.fftn: needs at least one axis, got a scalar", F.fftn, hl.array(1.5)},
    {"fft.ifft2: needs at least one axis, got a scalar", F.ifft2, hl.array(1.5)},
    {"fft.irfftn: needs at least one axis, got a scalar", F.irfftn, hl.array(1.5), nil, {}},
    {"fft.fft: argument 1 is a string, expected an array", F.fft, "abc"},
    {"fft.rfft: takes a real array, got complex128 (use hl.fft.fft for complex input)", F.rfft, z},
    {"fft.rfftn: takes a real array, got complex64 (use hl.fft.fft for complex input)", F.rfftn, z:astype("complex64")},
    {"fft.rfft2: takes a real array, got complex128 (use hl.fft.fft for complex input)", F.rfft2, z},
    {"fft.ihfft: takes a real array, got complex128 (use hl.fft.fft for complex input)", F.ihfft, z},
    {"fft.hfft: norm must be \"backward\", \"ortho\" or \"forward\", got both", F.hfft, z, nil, nil, "both"},
    {"fft.ihfft: unknown option 'm' (the options are n, axis, norm)", F.ihfft, hl.ones({4}), {m = 2}},
    -- lengths that cannot be inferred, empty axes
    {"fft.irfft: cannot infer the output length from 1 value(s); give n", F.irfft, hl.ones({3, 1})},
    {"fft.hfft: cannot infer the output length from 1 value(s); give n", F.hfft, hl.ones({3, 1})},
    {"fft.irfftn: cannot infer the last output length from 1 value(s); give s", F.irfftn, hl.ones({3, 1})},
    {"fft.irfft2: cannot infer the last output length from 1 value(s); give s", F.irfft2, hl.ones({1, 4}), nil, {2, 1}},
    {"fft.fft: the axis has no values (give n to pad it)", F.fft, hl.zeros({2, 0})},
    {"fft.rfft: the axis has no values (give n to pad it)", F.rfft, hl.zeros({0})},
    {"fft.fftn: axis 2 has no values (give s to pad it)", F.fftn, hl.zeros({2, 0})},
    {"fft.rfftn: the axis has no values (give n to pad it)", F.rfftn, hl.zeros({2, 0})},
    -- fftfreq and rfftfreq
    {"fft.fftfreq: d must be a non-zero number, got 0", F.fftfreq, 4, 0},
    {"fft.rfftfreq: d must be a non-zero number, got nan", F.rfftfreq, 4, 0 / 0},
    {"fft.fftfreq: d must be a non-zero number, got x", F.fftfreq, 4, {d = "x"}},
    {"fft.fftfreq: n must be a positive integer, got 0", F.fftfreq, 0},
    {"fft.rfftfreq: n must be a positive integer, got 2.5", F.rfftfreq, 2.5},
    {"fft.fftfreq: dtype must be \"float32\" or \"float64\", got int32", F.fftfreq, 4, 1, "int32"},
  }
  for _, c in ipairs(cases) do
    it(c[1], function()
      local msg = err_of(c[2], unpack(c, 3, 7))
      has(msg, "halua: " .. c[1])
    end)
  end
  it("says the same under jit, vmap and grad", function()
    local msg = "halua: fft.fft: n must be a positive integer, got 0"
    has(err_of(hl.jit(function(u) return F.fft(u, 0) end), x), msg)
    has(err_of(hl.vmap(function(u) return F.fft(u, 0) end), x), msg)
    has(err_of(hl.grad(function(u) return hl.sum(hl.abs(F.fft(u, 0))) end), x), msg)
    has(err_of(hl.jit(function(u) return F.rfft(u) end), z), "halua: fft.rfft: takes a real array, got complex128")
    has(err_of(hl.vmap(function(u) return F.fft(u, nil, 2) end), x), "halua: fft.fft: axis 2 is out of range for 1 dimensions")
    has(err_of(hl.vmap(function(u) return F.irfft(u) end, 2), hl.ones({1, 3})), "halua: fft.irfft: cannot infer the output length")
  end)
  it("asks for a real part of a complex result under grad", function()
    has(err_of(hl.grad(function(u) return hl.sum(F.fft(u)) end), x),
        "grad: the function must return a real scalar but returned complex128[]; differentiate hl.real(f(x)) or hl.abs")
  end)
end)
