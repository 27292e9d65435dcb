-- The samples run as a user runs them (a separate luajit process), with short settings where the
-- full run is long, and their accuracy is checked from what they print. digits_mlp runs in full:
-- its >= 97% is the README's claim.
local root = debug.getinfo(1, "S").source:match("^@(.*/)tests/lua/") or "./"

-- runs a sample; returns its exit status and output (stdout and stderr)
local function run(sample, args)
  local out = os.tmpname()
  local cmd = string.format("cd '%s' && HALUA_QUIET=1 luajit samples/%s %s > '%s' 2>&1", root, sample, args or "", out)
  local ok = os.execute(cmd)
  local f = assert(io.open(out))
  local text = f:read("*a")
  f:close()
  os.remove(out)
  return ok == 0 or ok == true, text
end

local function accuracy(text)
  local a = text:match("test accuracy ([%d.]+)%%")
  assert(a, "no test accuracy in the output:\n" .. text)
  return tonumber(a) / 100
end

describe("samples", function()
  it("digits_mlp reaches 97% test accuracy and reloads its checkpoint", function()
    local ckpt = os.tmpname()
    local ok, text = run("digits_mlp.lua", "--checkpoint " .. ckpt .. ".npz")
    os.remove(ckpt)
    os.remove(ckpt .. ".npz")
    assert(ok, text)
    assert.is_true(accuracy(text) >= 0.97, text)
    assert.truthy(text:find("epoch  20", 1, true), text)
    assert.truthy(text:find("reloaded, test accuracy", 1, true), text)
  end)

  it("digits_export: a C program linking the exported MLP classifies the test set as the Lua run does", function()
    local out = os.tmpname()
    os.remove(out)
    local ok, text = run("digits_export.lua", "--epochs 4 --min-accuracy 0.9 --out " .. out .. " --checkpoint " .. out .. ".npz")
    os.execute("rm -rf '" .. out .. "' '" .. out .. ".npz'")
    assert(ok, text)
    local lua_n = text:match("Lua: (%d+) of 360 test images")
    local c_n = text:match("C: (%d+) of 360 test images")
    assert.truthy(lua_n and lua_n == c_n, text)
    assert.is_true(tonumber(c_n) >= 0.9 * 360, text)
    assert.truthy(text:find("the C library and the Lua run agree", 1, true), text)
  end)

  it("digits_cnn learns (3 epochs)", function()
    local ckpt = os.tmpname()
    local ok, text = run("digits_cnn.lua", "--epochs 3 --min-accuracy 0.9 --checkpoint " .. ckpt .. ".npz")
    os.remove(ckpt)
    os.remove(ckpt .. ".npz")
    assert(ok, text)
    assert.is_true(accuracy(text) >= 0.9, text)
  end)

  it("logreg fits inside one jitted fori_loop (100 steps)", function()
    local ok, text = run("logreg.lua", "--steps 100 --min-accuracy 0.93")
    assert(ok, text)
    assert.is_true(accuracy(text) >= 0.93, text)
    assert.truthy(text:find("step  100", 1, true), text)
  end)

  it("newton: Rosenbrock to (1, 1), then logistic regression by Newton steps (hessian + linalg.solve)", function()
    local ok, text = run("newton.lua", "--steps 6 --min-accuracy 0.96")
    assert(ok, text)
    assert.truthy(text:find("minimum (1.000000000, 1.000000000)", 1, true), text)
    assert.is_true(accuracy(text) >= 0.96, text)
  end)

  it("centroids classifies by nearest class mean", function()
    local ok, text = run("centroids.lua")
    assert(ok, text)
    local acc = tonumber(text:match("nearest%-centroid test accuracy: ([%d.]+)%%"))
    assert(acc and acc >= 80, text)
  end)

  it("transformer: a character-level model of the GPL's text whose loss falls, and a generated line", function()
    local ok, text = run("transformer.lua", "--epochs 3 --steps 15 --batch 16 --seq 32 --dim 32 --layers 1 --generate 40")
    assert(ok, text)
    local first = tonumber(text:match("initial loss ([%d.]+)"))
    local losses = {}
    for l in text:gmatch("epoch +%d+ +train loss [%d.]+ +held batch loss ([%d.]+)") do losses[#losses + 1] = tonumber(l) end
    assert.are.equal(3, #losses, text)
    assert(first and losses[3] < first - 1, "the loss did not fall by 1 nat:\n" .. text)
    assert(losses[3] < losses[1], text)
    local line = text:match("generated: ([^\n]*)")
    assert(line and #line == 40, text)
  end)

  it("a sample's bad option is a usage message, not a stack trace", function()
    local ok, text = run("digits_mlp.lua", "--no-such-option 1")
    assert.is_false(ok)
    assert.truthy(text:find("usage: luajit samples/digits_mlp.lua", 1, true), text)
  end)
end)
