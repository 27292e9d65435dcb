-- Collect cases, let NumPy answer them all in one process, then make each case a test.
--   suite("title", function(case) case(name, function() return <halua value> end, "<NumPy expr>", {inputs}, opts) end)
local np = require "support.numpy"

return function(title, build)
  -- busted's describe/it/setup live in the calling spec's environment
  local env = getfenv(2)
  local describe, it, setup = env.describe, env.it, env.setup
  describe(title, function()
    local batch, checks = np.batch(), {}
    local function case(name, got, expr, inputs, opts)
      checks[#checks + 1] = {name = name, got = got, want = batch:add(expr, inputs), opts = opts}
    end
    build(case)
    setup(function() batch:run() end)
    for _, c in ipairs(checks) do
      it(c.name, function() np.assert_close(c.got(), c.want(), c.opts) end)
    end
  end)
end
