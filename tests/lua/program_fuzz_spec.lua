-- The program fuzzer (fuzz/programs.lua) at a fixed seed: random small array programs
-- (support/program_gen.lua: 1 to 12 statements over 1 to 3 inputs of random shapes and dtypes),
-- each run eagerly and under hl.jit (bundled: many programs per jitted function) and checked
-- against the other and against NumPy, within each element's rounding sensitivity
-- (support/program_fuzz.lua). The same programs every run; `luajit fuzz/programs.lua --seconds N`
-- explores new ones, and `--program SEED` reruns one that failed here.
local gen = require "support.program_gen"
local fuzz = require "support.program_fuzz"

local SEED, COUNT = 20250101, 100

describe("random programs, eagerly and under jit, against each other and NumPy", function()
  local progs = {}
  for i = 1, COUNT do progs[i] = gen.generate(SEED * 100000 + i) end
  local failed = {}
  setup(function()
    local res = fuzz.check(progs)
    for _, f in ipairs(res.failures) do
      failed[f.prog.seed] = (failed[f.prog.seed] and failed[f.prog.seed] .. "\n" or "") .. fuzz.report(f)
    end
  end)
  for _, p in ipairs(progs) do
    it(string.format("program %d (%d statements, %s%s%s)", p.seed, p.nops, p.dtype, gen.sname(p.shape), p.wild and ", wild" or ""),
       function() if failed[p.seed] then error(failed[p.seed], 0) end end)
  end
end)

-- Bundles of wild programs (NaN, inf and -0.0 inputs) that exposed a fault, each checked as the
-- fuzzer ran it: one jitted function of the bundle's programs, so that the fault's conditions
-- (which programs share a pipeline part, what is inlined where) come back too
local BUNDLES = {
  -- argmin of log1p(asin(...)) gave INT64_MIN: its two reductions each computed their input,
  -- inlined, one in IEEE arithmetic and one with fast-math, and compared them for equality
  -- (hl_lower_ieee left float operands of non-float values fast-math; fixed 2026-11-27)
  {first = 664200553, last = 664200564},
}

describe("bundles of wild programs that once failed, under jit as the fuzzer ran them", function()
  for _, b in ipairs(BUNDLES) do
    local progs = {}
    for s = b.first, b.last do progs[#progs + 1] = gen.generate(s, {wild = true}) end
    it(string.format("programs %d to %d", b.first, b.last), function()
      local res = fuzz.check(progs, {bundle = #progs})
      local text = {}
      for _, f in ipairs(res.failures) do text[#text + 1] = fuzz.report(f) end
      assert.are.equal(#progs, res.ran)
      assert(#res.failures == 0, table.concat(text, "\n"))
    end)
  end
end)
