-- Spectral methods with hl.fft and hl.linalg.svd:
--  1. a noisy two-tone signal: its spectrum (rfft, rfftfreq) finds the tones; then a low-pass
--     filter (a windowed sinc) applied by convolution, computed by FFT (rfft, multiply, irfft: O(n log n)) and
--     checked against direct convolution (hl.convolve: O(n k)), eagerly and inside hl.jit;
--  2. a 2-D FFT convolution (rfft2/irfft2) blurring the digits images, checked against hl.nn.conv2d;
--  3. PCA of the 8x8 digits by SVD: the explained variance per component, how many components
--     keep 90% and 95% of it, and the error of reconstructing the test images from them.
--
--   luajit samples/spectral.lua [--n N] [--taps N] [--seed N] [--components N]
local hl = require "halua"
local here = debug.getinfo(1, "S").source:match("^@(.*/)") or "./"
package.path = here .. "?.lua;" .. package.path
local digits = require "digits"

local opts = digits.options("spectral", {n = 8000, taps = 151, seed = 7, components = 20},
  "[--n N] [--taps N] [--seed N] [--components N]")
local t_start = digits.now()

---------------------------------------------------------------- 1. one dimension
local rate = 1000                                       -- samples per second
local n, taps = opts.n, opts.taps
local t = hl.arange(n, "float64") / rate
local noise = hl.random.normal(hl.random.key(opts.seed), {n}, "float64")
local signal = hl.sin(2 * math.pi * 50 * t) + 0.5 * hl.sin(2 * math.pi * 120 * t) + 0.8 * noise

-- the spectrum: the two largest peaks of |rfft| are the tones
local power = hl.abs(hl.fft.rfft(signal))
local freqs = hl.fft.rfftfreq(n, 1 / rate, "float64")
local top = hl.argsort(-power)                          -- 1-based positions, largest first
local f1, f2 = freqs[top[1]:item()]:item(), freqs[top[2]:item()]:item()
print(string.format("signal: %d samples at %d Hz; its two strongest frequencies: %.2f Hz and %.2f Hz (tones at 50 and 120 Hz)",
  n, rate, math.min(f1, f2), math.max(f1, f2)))

-- a low-pass filter (a Hann-windowed sinc, cut-off 80 Hz), and the full linear convolution two ways
local half, cutoff = (taps - 1) / 2, 80
local m = hl.arange(taps, "float64") - half
local safe = hl.where(hl.eq(m, 0), 1, m)
local sinc = hl.where(hl.eq(m, 0), 2 * cutoff / rate, hl.sin(2 * math.pi * cutoff / rate * safe) / (math.pi * safe))
local kernel = sinc * (0.5 - 0.5 * hl.cos(2 * math.pi * hl.arange(taps, "float64") / (taps - 1)))
kernel = kernel / hl.sum(kernel)
local function fft_convolve(x, k)
  local len = x.shape[1] + k.shape[1] - 1             -- no wrap-around: the linear convolution
  return hl.fft.irfft(hl.fft.rfft(x, len) * hl.fft.rfft(k, len), len)
end

-- a call's time, the second of two: the first compiles what it needs (eager kernels too)
local function timed(f, ...)
  f(...)[1]:item()
  local t0 = digits.now()
  local r = f(...)
  r[1]:item()                                           -- (waits for the result)
  return r, digits.now() - t0
end
local direct, t_direct = timed(hl.convolve, signal, kernel)
local by_fft, t_fft = timed(fft_convolve, signal, kernel)
local jitted = hl.jit(fft_convolve)
local by_jit, t_jit = timed(jitted, signal, kernel)
local err = hl.max(hl.abs(by_fft - direct)):item()
local err_jit = hl.max(hl.abs(by_jit - direct)):item()
print(string.format("convolution with a %d-tap low-pass filter: %d outputs; by FFT %.2f ms, jitted %.2f ms, direct %.2f ms",
  taps, by_fft.shape[1], t_fft * 1e3, t_jit * 1e3, t_direct * 1e3))
print(string.format("FFT vs direct convolution: max |difference| %.2e (eager), %.2e (jit)", err, err_jit))
if err > 1e-9 or err_jit > 1e-9 then error("halua: spectral: FFT convolution disagrees with direct convolution", 0) end

-- the filtered signal keeps the 50 Hz tone and loses the 120 Hz tone and most of the noise
local smooth = by_fft[{{half + 1, half + n}}]
local clean = hl.sin(2 * math.pi * 50 * t)
local function rms(x) return math.sqrt(hl.mean(x * x):item()) end
print(string.format("rms distance to the 50 Hz tone: %.3f before filtering, %.3f after", rms(signal - clean), rms(smooth - clean)))

---------------------------------------------------------------- 2. two dimensions
local xtr, _, xte = digits.load()
local images = hl.reshape(xtr, {xtr.shape[1], 1, 8, 8}):astype("float64")
local blur = hl.array({{1, 2, 1}, {2, 4, 2}, {1, 2, 1}}, "float64") / 16
-- "same" correlation by conv2d against the same by FFT: pad to 10x10, multiply spectra, crop
local ref = hl.nn.conv2d(images, hl.reshape(blur, {1, 1, 3, 3}), {padding = 1})
local spectrum = hl.fft.rfft2(images, {10, 10}) * hl.fft.rfft2(blur, {10, 10})
local full = hl.fft.irfft2(spectrum, {10, 10})          -- the full 10x10 convolution (symmetric kernel)
local same = full[{{}, {}, {2, 9}, {2, 9}}]
local err2 = hl.max(hl.abs(same - ref)):item()
print(string.format("2-D: %d digits blurred by rfft2/irfft2 against conv2d: max |difference| %.2e", images.shape[1], err2))
if err2 > 1e-12 then error("halua: spectral: 2-D FFT convolution disagrees with conv2d", 0) end

---------------------------------------------------------------- 3. PCA by SVD
local X = xtr:astype("float64")
local mean = hl.mean(X, 1)
local _, s, vh = hl.linalg.svd(X - mean, false)
local var = s * s
local ratio = (var / hl.sum(var)):totable()
local cum, k90, k95, line = 0, nil, nil, {}
for i, r in ipairs(ratio) do
  cum = cum + r
  if not k90 and cum >= 0.90 then k90 = i end
  if not k95 and cum >= 0.95 then k95 = i end
  if i <= 10 then line[#line + 1] = string.format("%.3f", r) end
end
print(string.format("PCA of %d digits (64 pixels): explained variance of the first 10 components: %s",
  X.shape[1], table.concat(line, " ")))
print(string.format("components for 90%% of the variance: %d; for 95%%: %d", k90, k95))

-- the test images through the first k components and back
local k = opts.components
local basis = vh[{{1, k}}]                              -- k x 64
local Xt = xte:astype("float64") - mean
local recon = hl.matmul(hl.matmul(Xt, basis.T), basis)
local rel = math.sqrt(hl.sum((recon - Xt) ^ 2):item() / hl.sum(Xt * Xt):item())
print(string.format("test images from %d components: relative reconstruction error %.3f", k, rel))
print(string.format("done in %.2f s", digits.now() - t_start))
