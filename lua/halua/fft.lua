-- hl.fft: discrete Fourier transforms as numpy.fft and jax.numpy.fft have them (docs/fft.md).
-- Four primitives do the work: fft.forward and fft.backward transform complex values, seen as
-- their float (re, im) pairs, along one axis with no scaling; fft.real the real values rfft takes,
-- and fft.real_inverse gives irfft's (engine/host/hl_fft.c on the host, an extern stage in
-- pipelines; cuFFT for the complex ones on CUDA). Everything here is made of them, of view_as_real /
-- view_as_complex, slices, concatenations and scalings, so derivatives (each primitive is the
-- other's transpose), batching and jit follow from those rules. Axes are 1-based.
return function(hl, core, shared)
  local util = require "halua.util"
  local fail = util.fail
  local fft = {}
  hl.fft = fft

  local NORMS = {backward = true, ortho = true, forward = true}

  local function is_complex(x) return x.dtype == "complex64" or x.dtype == "complex128" end

  -- x as a complex array: float64 gives complex128, every other real dtype complex64 (hl.complex's rule)
  local function as_complex(x)
    if is_complex(x) then return x end
    return x:astype(x.dtype == "float64" and "complex128" or "complex64")
  end

  local function check_norm(op, norm)
    if norm == nil then return "backward" end
    if not NORMS[norm] then
      fail("%s: norm must be \"backward\", \"ortho\" or \"forward\", got %s", op, tostring(norm))
    end
    return norm
  end

  -- (an infinite n is an integer to math.floor: refused here rather than by the zeros it would pad with)
  local function check_length(op, n, what)
    if type(n) ~= "number" or n ~= math.floor(n) or n < 1 or n == math.huge then
      fail("%s: %s must be a positive integer, got %s", op, what, tostring(n))
    end
    return n
  end

  -- x with its 0-based axis a cut to, or padded with zeros at the end to, n values
  local function fit(x, a, n)
    local have = x.shape[a + 1]
    if have == n then return x end
    if have > n then return util.slice_axis(core, x, a, 0, n) end
    local shape = x.shape
    shape[a + 1] = n - have
    return hl.concatenate({x, hl.fill_like(x, 0, shape)}, a + 1)   -- (zeros where x is: its device, its trace)
  end

  -- p, the values of a transform of length n, scaled as `norm` mode has them, forward or backward.
  -- (Divided by n rather than multiplied by 1 / n: under hl.jit's dynamic_axes a length that
  -- follows a dynamic size is then a number of the program that stays one for every size.)
  local function scaled(p, norm, n, backward)
    if norm == "ortho" then return p * (1 / math.sqrt(n)) end
    if (norm == "forward") ~= backward then return p / n end
    return p
  end

  -- the transform of complex z along 0-based axis a, of length n, scaled for `norm`
  local function transform(z, a, backward, norm, n)
    return core.view_as_complex(scaled(core.fft(core.view_as_real(z), a, backward), norm, n, backward))
  end

  -- three optional arguments (names[1..3]) given in order, or some of them then an options table
  -- holding any of them (its keys checked): the three values
  local function positional_or_options(op, names, example, p, q, r, opts)
    if util.is_options(p) then p, opts = nil, p
    elseif util.is_options(q) then q, opts = nil, q
    elseif util.is_options(r) then r, opts = nil, r end
    if opts ~= nil then
      util.options(op, opts, names, example)
      if opts[names[1]] ~= nil then p = opts[names[1]] end
      if opts[names[2]] ~= nil then q = opts[names[2]] end
      if opts[names[3]] ~= nil then r = opts[names[3]] end
    end
    return p, q, r
  end

  -- (x [, n] [, axis] [, norm] [, opts]) for the one-axis transforms
  local function one_axis_args(op, x, n, axis, norm, opts)
    n, axis, norm = positional_or_options(op, {"n", "axis", "norm"}, "{n = 64, axis = 1, norm = \"ortho\"}", n, axis, norm, opts)
    x = shared.as_array(x, op)
    if x.ndim == 0 then fail("%s: needs at least one axis, got a scalar", op) end
    local a = util.norm_axis(op, axis == nil and -1 or axis, x.ndim)
    if n ~= nil then check_length(op, n, "n") end
    return x, n, a, check_norm(op, norm)
  end

  local function c2c(op, backward)
    return function(x, n, axis, norm, opts)
      local a
      x, n, a, norm = one_axis_args(op, x, n, axis, norm, opts)
      n = n or x.shape[a + 1]
      if n < 1 then fail("%s: the axis has no values (give n to pad it)", op) end
      return transform(fit(as_complex(x), a, n), a, backward, norm, n)
    end
  end
  fft.fft = c2c("fft.fft", false)
  fft.ifft = c2c("fft.ifft", true)

  local function real_only(op, x)
    if is_complex(x) then fail("%s: takes a real array, got %s (use hl.fft.fft for complex input)", op, x.dtype) end
  end

  -- the first math.floor(n / 2) + 1 values of the transform of real values (the rest are their conjugates)
  local function rfft_axis(op, x, n, a, norm)
    real_only(op, x)
    if n < 1 then fail("%s: the axis has no values (give n to pad it)", op) end
    x = fit(x.dtype == "float64" and x or x:astype("float32"), a, n)
    return core.view_as_complex(scaled(core.fft(x, a, "real"), norm, n, false))
  end

  -- real values of length n from the first math.floor(n / 2) + 1 values of their transform: the missing
  -- ones are conjugates of those (X[n - k] = conj(X[k])), the imaginary parts of X[0] and, for an
  -- even n, X[n / 2] are ignored (as NumPy)
  local function irfft_axis(x, n, a, norm)
    local z = fit(as_complex(x), a, math.floor(n / 2) + 1)
    return scaled(core.fft(core.view_as_real(z), a, "real_inverse", n), norm, n, true)
  end

  function fft.rfft(x, n, axis, norm, opts)
    local op, a = "fft.rfft", nil
    x, n, a, norm = one_axis_args(op, x, n, axis, norm, opts)
    return rfft_axis(op, x, n or x.shape[a + 1], a, norm)
  end

  -- irfft's and hfft's default output length: 2 (m - 1) for m values along the axis
  local function real_length(op, x, n, a)
    if n ~= nil then return n end
    n = 2 * (x.shape[a + 1] - 1)
    if n < 1 then fail("%s: cannot infer the output length from %d value(s); give n", op, x.shape[a + 1]) end
    return n
  end

  function fft.irfft(x, n, axis, norm, opts)
    local op, a = "fft.irfft", nil
    x, n, a, norm = one_axis_args(op, x, n, axis, norm, opts)
    return irfft_axis(x, real_length(op, x, n, a), a, norm)
  end

  -- hfft and ihfft, numpy.fft's transforms of a Hermitian-symmetric signal (a real spectrum):
  -- irfft of the conjugate and the conjugate of rfft, with the norm mode's direction swapped
  local SWAPPED = {backward = "forward", forward = "backward", ortho = "ortho"}

  function fft.hfft(x, n, axis, norm, opts)
    local op, a = "fft.hfft", nil
    x, n, a, norm = one_axis_args(op, x, n, axis, norm, opts)
    return irfft_axis(hl.conj(as_complex(x)), real_length(op, x, n, a), a, SWAPPED[norm])
  end

  function fft.ihfft(x, n, axis, norm, opts)
    local op, a = "fft.ihfft", nil
    x, n, a, norm = one_axis_args(op, x, n, axis, norm, opts)
    return hl.conj(rfft_axis(op, x, n or x.shape[a + 1], a, SWAPPED[norm]))
  end

  -- (x [, s] [, axes] [, norm] [, opts]) for the many-axis transforms: the 0-based axes and their
  -- lengths, as numpy.fft.fftn: with s but no axes, the last #s axes; default_axes when neither
  local function many_axes_args(op, x, s, axes, norm, opts, default_axes)
    s, axes, norm = positional_or_options(op, {"s", "axes", "norm"}, "{axes = {1, 2}, norm = \"ortho\"}", s, axes, norm, opts)
    x = shared.as_array(x, op)
    if s ~= nil and type(s) ~= "table" then fail("%s: s must be a list of lengths, got %s", op, type(s)) end
    if axes ~= nil and type(axes) ~= "table" then axes = {axes} end
    if axes == nil then
      -- (fft2's pair of axes stands even with s, as NumPy's: an s of another length is an error)
      if default_axes then
        axes = default_axes
      elseif s ~= nil then
        axes = {}
        for k = 1, #s do axes[k] = k - #s - 1 end
      else
        axes = {}
        for k = 1, x.ndim do axes[k] = k end
      end
    end
    if s ~= nil and #s ~= #axes then fail("%s: s has %d lengths for %d axes", op, #s, #axes) end
    if x.ndim == 0 then fail("%s: needs at least one axis, got a scalar", op) end
    local a, seen = {}, {}
    for k, ax in ipairs(axes) do
      a[k] = util.norm_axis(op, ax, x.ndim)
      if seen[a[k]] then fail("%s: axis %d is repeated", op, a[k] + 1) end
      seen[a[k]] = true
    end
    if #a == 0 then fail("%s: needs at least one axis", op) end
    local lens = {}
    for k = 1, #a do lens[k] = s and check_length(op, s[k], "each length in s") or x.shape[a[k] + 1] end
    return x, a, lens, check_norm(op, norm), s ~= nil
  end

  local function c2c_many(op, backward, default_axes)
    return function(x, s, axes, norm, opts)
      local a, lens
      x, a, lens, norm = many_axes_args(op, x, s, axes, norm, opts, default_axes)
      local z = as_complex(x)
      for k = 1, #a do
        if lens[k] < 1 then fail("%s: axis %d has no values (give s to pad it)", op, a[k] + 1) end
        z = transform(fit(z, a[k], lens[k]), a[k], backward, norm, lens[k])
      end
      return z
    end
  end
  fft.fftn = c2c_many("fft.fftn", false)
  fft.ifftn = c2c_many("fft.ifftn", true)
  fft.fft2 = c2c_many("fft.fft2", false, {-2, -1})
  fft.ifft2 = c2c_many("fft.ifft2", true, {-2, -1})

  -- the real transform over the last of the axes, then full ones over the others
  local function rfft_many(op, default_axes)
    return function(x, s, axes, norm, opts)
      local a, lens
      x, a, lens, norm = many_axes_args(op, x, s, axes, norm, opts, default_axes)
      local z = rfft_axis(op, x, lens[#a], a[#a], norm)
      for k = 1, #a - 1 do
        if lens[k] < 1 then fail("%s: axis %d has no values (give s to pad it)", op, a[k] + 1) end
        z = transform(fit(z, a[k], lens[k]), a[k], false, norm, lens[k])
      end
      return z
    end
  end
  fft.rfftn = rfft_many("fft.rfftn")
  fft.rfft2 = rfft_many("fft.rfft2", {-2, -1})

  -- full inverse transforms over all but the last axis, then the real one over it; without s the
  -- last length is 2 (m - 1)
  local function irfft_many(op, default_axes)
    return function(x, s, axes, norm, opts)
      local a, lens, given
      x, a, lens, norm, given = many_axes_args(op, x, s, axes, norm, opts, default_axes)
      local last = a[#a]
      if not given then
        lens[#a] = 2 * (x.shape[last + 1] - 1)
        if lens[#a] < 1 then fail("%s: cannot infer the last output length from %d value(s); give s", op, x.shape[last + 1]) end
      end
      local z = as_complex(x)
      for k = 1, #a - 1 do
        if lens[k] < 1 then fail("%s: axis %d has no values (give s to pad it)", op, a[k] + 1) end
        z = transform(fit(z, a[k], lens[k]), a[k], true, norm, lens[k])
      end
      return irfft_axis(z, lens[#a], last, norm)
    end
  end
  fft.irfftn = irfft_many("fft.irfftn")
  fft.irfft2 = irfft_many("fft.irfft2", {-2, -1})

  -- the sample frequencies of a transform of length n with sample spacing d: [0, 1, ..., -2, -1] / (d n)
  local function freq_args(op, n, d, dtype)
    check_length(op, n, "n")
    if util.is_options(d) then
      local o = d
      util.options(op, o, {"d", "dtype"}, "{d = 0.01, dtype = \"float64\"}")
      d, dtype = o.d, o.dtype
    end
    d = d == nil and 1 or d
    if type(d) ~= "number" or d == 0 or d ~= d then fail("%s: d must be a non-zero number, got %s", op, tostring(d)) end
    dtype = dtype or "float32"
    if dtype ~= "float32" and dtype ~= "float64" then fail("%s: dtype must be \"float32\" or \"float64\", got %s", op, tostring(dtype)) end
    return d, dtype
  end

  function fft.fftfreq(n, d, dtype)
    d, dtype = freq_args("fft.fftfreq", n, d, dtype)
    local k = hl.arange(n, "float64")
    k = hl.where(hl.lt(k, math.floor((n + 1) / 2)), k, k - n)
    return (k / (d * n)):astype(dtype)
  end

  function fft.rfftfreq(n, d, dtype)
    d, dtype = freq_args("fft.rfftfreq", n, d, dtype)
    return (hl.arange(math.floor(n / 2) + 1, "float64") / (d * n)):astype(dtype)
  end

  -- fftshift moves the zero frequency to the centre of each axis (a roll by math.floor(n / 2)), ifftshift back
  local function shift(op, inverse)
    return function(x, axes)
      x = shared.as_array(x, op)
      if axes == nil then
        axes = {}
        for k = 1, x.ndim do axes[k] = k end
      elseif type(axes) ~= "table" then
        axes = {axes}
      end
      -- (the normalised axes go to a new list: the caller's stays as it was given)
      local shifts, dims = {}, {}
      for k, ax in ipairs(axes) do
        local a = util.norm_axis(op, ax, x.ndim)
        dims[k] = a + 1
        local n = x.shape[a + 1]
        shifts[k] = inverse and -(math.floor(n / 2)) or math.floor(n / 2)
      end
      if #dims == 0 then return x end
      return hl.roll(x, shifts, dims)
    end
  end
  fft.fftshift = shift("fft.fftshift", false)
  fft.ifftshift = shift("fft.ifftshift", true)
end
