-- Heat diffusion on a square plate: 1,000 explicit steps inside one jitted hl.fori_loop. The loop
-- body is compiled once into its own pipeline and run from C, so compiling takes the same time for
-- 100 steps as for 10,000. Then the gradient of the centre's final temperature with respect to the
-- initial plate, through the same compiled loop. Usage: luajit samples/heat.lua [n] [steps]
-- (defaults 128, 1000). Last, how a perturbation of the initial plate travels: forward mode
-- through the same loop. As a module (scripts/bench uses it): require "heat" gives
-- {step = ..., simulate = ..., sensitivity = ..., perturbation = ..., plate = ...}.
local hl = require "halua"
local M = {}

-- one explicit Euler step of u_t = alpha * laplacian(u); the border rows and columns stay fixed
function M.step(u, alpha)
  local n = u.shape[1]
  local up = hl.concatenate({u[{{1, 1}}], u[{{1, n - 1}}]}, 1)
  local down = hl.concatenate({u[{{2, n}}], u[{{n, n}}]}, 1)
  local left = hl.concatenate({u[{{}, {1, 1}}], u[{{}, {1, n - 1}}]}, 2)
  local right = hl.concatenate({u[{{}, {2, n}}], u[{{}, {n, n}}]}, 2)
  local lap = up + down + left + right - 4 * u
  return u + alpha * M.interior(n, u.dtype) * lap
end

-- 1 inside, 0 on the border
function M.interior(n, dtype)
  local i = hl.arange(n)
  local inside = hl.logical_and(hl.gt(i, 0), hl.lt(i, n - 1))
  return hl.logical_and(hl.reshape(inside, {n, 1}), hl.reshape(inside, {1, n})):astype(dtype or "float32")
end

-- a cold plate with a hot square in the middle
function M.plate(n)
  local i = hl.arange(n)
  local hot = hl.logical_and(hl.ge(i, math.floor(n * 3 / 8)), hl.lt(i, math.floor(n * 5 / 8)))
  return hl.logical_and(hl.reshape(hot, {n, 1}), hl.reshape(hot, {1, n})):astype("float32") * 100
end

-- `steps` steps in one compiled loop
function M.simulate(steps, alpha)
  return hl.jit(function(u) return hl.fori_loop(1, steps, function(_, v) return M.step(v, alpha or 0.2) end, u) end)
end

-- The sensitivity of the centre's final temperature to the initial plate, d u_final[c] / d u0:
-- reverse mode through the compiled loop, itself a compiled loop that runs the steps backwards
function M.sensitivity(steps, alpha)
  return hl.jit(hl.grad(function(u)
    local c = math.floor(u.shape[1] / 2)
    local v = hl.fori_loop(1, steps, function(_, s) return M.step(s, alpha or 0.2) end, u)
    return v[{c, c}]
  end))
end

-- How a perturbation du of the initial plate moves the final plate (the directional derivative
-- of the final plate along du): forward mode through the compiled loop, itself a compiled loop
-- that carries the perturbation beside the plate
function M.perturbation(steps, alpha)
  return hl.jit(function(u, du)
    local _, moved = hl.jvp(function(p)
      return hl.fori_loop(1, steps, function(_, v) return M.step(v, alpha or 0.2) end, p)
    end, {u}, {du})
    return moved
  end)
end

local script = arg and arg[0] and arg[0]:match("heat%.lua$")
if not script then return M end

local n, steps = tonumber(arg[1]) or 128, tonumber(arg[2]) or 1000
local ffi = require "ffi"
ffi.cdef [[typedef struct { long tv_sec; long tv_nsec; } heat_timespec; int clock_gettime(int, heat_timespec *);]]
local ts = ffi.new("heat_timespec")
local function now()
  ffi.C.clock_gettime(1, ts)
  return tonumber(ts.tv_sec) + tonumber(ts.tv_nsec) * 1e-9
end

local u0 = M.plate(n)
local sim = M.simulate(steps)
print(string.format("heat: a %dx%d plate, %d steps of explicit diffusion in one jitted fori_loop", n, n, steps))
local t0 = now()
sim:lower(u0)
local t1 = now()
local u = sim(u0)
local t2 = now()
print(string.format("compiled in %.0f ms; ran %d steps in %.1f ms (%.1f us a step)", (t1 - t0) * 1e3, steps,
                    (t2 - t1) * 1e3, (t2 - t1) * 1e6 / steps))
print(string.format("centre %.3f (from %.1f), heat kept inside the border: %.1f%% of the start", u[{math.floor(n / 2), math.floor(n / 2)}]:item(),
                    u0[{math.floor(n / 2), math.floor(n / 2)}]:item(), 100 * hl.sum(u):item() / hl.sum(u0):item()))
-- the same steps one by one, eagerly, for a check
local v = u0
for _ = 1, math.min(steps, 50) do v = M.step(v, 0.2) end
local w = M.simulate(math.min(steps, 50))(u0)
local diff = hl.max(hl.abs(v - w)):item()
print(string.format("check: 50 eager steps and the compiled loop differ by %.2e", diff))
if diff > 1e-3 then error("halua: heat: the compiled loop and the eager steps disagree", 0) end

-- the gradient through the compiled loop; diffusion is linear in the plate, so the gradient's
-- inner product with the initial plate is the centre's final temperature itself
local sens = M.sensitivity(steps)
t0 = now()
sens:lower(u0)
t1 = now()
local g = sens(u0)
t2 = now()
local c = math.floor(n / 2)
local centre, inner = u[{c, c}]:item(), hl.sum(g * u0):item()
print(string.format("gradient of the centre's final temperature by the initial plate, through the loop: compiled in %.0f ms, ran in %.1f ms",
                    (t1 - t0) * 1e3, (t2 - t1) * 1e3))
print(string.format("check: <gradient, plate> = %.6f, the centre's final temperature = %.6f", inner, centre))
if math.abs(inner - centre) > 1e-3 * math.max(1, math.abs(centre)) then
  error("halua: heat: the gradient through the loop disagrees with the linear map it differentiates", 0)
end

-- the perturbation through the loop; diffusion is linear, so a perturbation moves as a plate does
local du = hl.zeros({n, n}):at({c, c}):set(1)
local pert = M.perturbation(steps)
t0 = now()
pert:lower(u0, du)
t1 = now()
local moved = pert(u0, du)
t2 = now()
local gap = hl.max(hl.abs(moved - sim(du))):item()
print(string.format("a perturbation of the centre, through the loop by forward mode: compiled in %.0f ms, ran in %.1f ms",
                    (t1 - t0) * 1e3, (t2 - t1) * 1e3))
print(string.format("check: it moves as a plate does: they differ by %.2e", gap))
if gap > 1e-5 then error("halua: heat: the perturbation through the loop disagrees with the linear map it differentiates", 0) end
