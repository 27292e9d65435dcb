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
