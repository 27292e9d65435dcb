-- hl.dist over MPI: starts real jobs with Open MPI's mpirun (scripts/setup installs openmpi-bin)
-- and checks what they print and how they end. The collectives themselves are tested on every
-- rank by tests/dist/collectives_spec.lua, run here as one rank (no mpirun), 2 ranks and 3 (more
-- ranks than this machine has cores: --oversubscribe).
local root = debug.getinfo(1, "S").source:match("^@(.*)/tests/lua/") or "."
local hl = require "halua"
do   -- absolute, for links made elsewhere
  local p = assert(io.popen("cd '" .. root:gsub("'", "'\\''") .. "' && pwd"))
  root = p:read("*l")
  p:close()
end

local function sh_quote(s) return "'" .. tostring(s):gsub("'", "'\\''") .. "'" end
local tmp = os.tmpname()
os.remove(tmp)
os.execute("mkdir -p " .. sh_quote(tmp))
-- mpirun refuses root unless told; CI runs as root
local env = "HALUA_DIST_TEST_DIR=" .. sh_quote(tmp) .. " OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 " ..
            "OMPI_MCA_rmaps_base_oversubscribe=1 "

-- runs a shell command (with a time limit), returns its exit status and its output (both streams)
local function run(cmd, limit)
  local out = tmp .. "/out.txt"
  local full = string.format("cd %s && %s timeout %d %s > %s 2>&1; echo $?", sh_quote(root), env, limit or 300, cmd,
                             sh_quote(out))
  local p = assert(io.popen(full))
  local status = tonumber(p:read("*a"):match("(%d+)%s*$"))
  p:close()
  local f = io.open(out)
  local text = f and f:read("*a") or ""
  if f then f:close() end
  return status, text
end

local busted = "$(command -v busted)"

describe("hl.dist jobs", function()
  teardown(function() os.execute("rm -rf " .. sh_quote(tmp)) end)

  it("mpirun is installed (Open MPI)", function()
    local status, text = run("mpirun --version", 30)
    assert.are.equal(0, status)
    assert.matches("Open MPI", text)
  end)

  for _, np in ipairs({1, 2, 3}) do
    it("passes every collective's test on " .. np .. " rank" .. (np > 1 and "s" or ""), function()
      local launcher = np == 1 and "" or ("mpirun -np " .. np .. " ")
      local status, text = run(launcher .. "luajit " .. busted .. " -o plainTerminal tests/dist/collectives_spec.lua", 600)
      if status ~= 0 then print(text) end
      assert.are.equal(0, status)
      local _, count = text:gsub("%d+ successes / 0 failures / 0 errors", "")
      assert.are.equal(np, count)   -- one clean summary per rank
    end)
  end

  local function script(name, body)
    local path = tmp .. "/" .. name
    local f = assert(io.open(path, "w"))
    f:write(body)
    f:close()
    return sh_quote(path)
  end

  local failing = [[
local hl = require "halua"
local r = hl.dist.rank()
if r == 2 then error("rank two gives up") end
print(hl.dist.psum(hl.ones(3)))   -- rank 1 waits here for rank 2
print("rank 1 should never get here")
]]

  it("a rank's error under scripts/halua ends the whole job at once, with that rank's message", function()
    local status, text = run("mpirun -np 2 scripts/halua " .. script("fail.lua", failing), 60)
    assert.are_not.equal(0, status)
    assert.are_not.equal(124, status)   -- (124: the time limit, a hang)
    assert.matches("halua: rank 2 of 2 failed: [^\n]*fail.lua:3: rank two gives up", text)
    assert.is_nil(text:find("should never get here", 1, true))
  end)

  it("a rank's error under plain luajit ends the whole job at once too (it exits without MPI_Finalize)", function()
    local status, text = run("mpirun -np 2 luajit " .. script("fail2.lua", failing), 60)
    assert.are_not.equal(0, status)
    assert.are_not.equal(124, status)
    assert.matches("rank two gives up", text)
    assert.is_nil(text:find("should never get here", 1, true))
  end)

  it("a rank that ends while another waits in a collective it never made ends the job after HALUA_DIST_EXIT_WAIT", function()
    local status, text = run("env HALUA_DIST_EXIT_WAIT=2 mpirun -np 2 luajit " .. script("extra.lua", [[
local hl = require "halua"
local r = hl.dist.rank()
hl.dist.psum(hl.ones(2))
if r == 2 then hl.dist.psum(hl.ones(2)) end   -- a collective rank 1 never makes
]]), 60)
    assert.are_not.equal(0, status)
    assert.are_not.equal(124, status)
    assert.matches("halua: rank 1 has finished, but other ranks have not reached the end after 2 s", text)
  end)

  it("scripts/halua passes arguments and exit codes as luajit does", function()
    local status, text = run("mpirun -np 2 scripts/halua " .. script("args.lua", [[
local hl = require "halua"
print("args", hl.dist.rank(), arg[0]:match("args.lua$"), ...)
if hl.dist.rank() == 1 then hl.dist.barrier() else hl.dist.barrier() end
]]) .. " a 'b c'", 60)
    assert.are.equal(0, status)
    assert.matches("args\t1\targs.lua\ta\tb c", text)
    assert.matches("args\t2\targs.lua\ta\tb c", text)
    status = run("scripts/halua " .. script("exit.lua", "os.exit(3)"), 60)
    assert.are.equal(3, status)
  end)

  it("without mpirun, a job of one rank: rank 1 of 1, every collective the identity", function()
    local status, text = run("luajit " .. script("one.lua", [[
local hl = require "halua"
print(hl.dist.init())
print(hl.dist.rank(), hl.dist.size(), hl.dist.mpi())
print(hl.dist.psum(hl.array({1, 2})), hl.dist.all_gather(hl.array({3}), 1))
]]), 60)
    assert.are.equal(0, status)
    assert.matches("1\t1\n1\t1\tfalse\n", text)
    assert.matches('hl.array%(%{1.0, 2.0%}%)\thl.array%(%{3.0%}%)', text)
  end)

  it("without Open MPI, hl.dist says which packages it needs", function()
    -- a module path with the engine but not halua_dist (as a build without libopenmpi-dev)
    os.execute("mkdir -p " .. sh_quote(tmp .. "/nompi") .. " && ln -sf " .. sh_quote(root .. "/build/halua_core.so") .. " " ..
               sh_quote(tmp .. "/nompi/halua_core.so"))
    local status, text = run("env LUA_CPATH=" .. sh_quote(tmp .. "/nompi/?.so") .. " luajit -e " ..
                             sh_quote("local hl = require 'halua'; print(pcall(hl.dist.init)); print(pcall(hl.dist.psum, 1))"), 60)
    assert.are.equal(0, status)
    assert.matches("false\thalua: dist: hl.dist needs Open MPI, which this build of halua lacks %(install Debian's " ..
                   "openmpi%-bin and libopenmpi%-dev, then rebuild: scripts/setup%)\n", text)
    local _, count = text:gsub("hl.dist needs Open MPI", "")
    assert.are.equal(2, count)
  end)

  it("samples/digits_dp.lua on 2 ranks reaches the one-process parameters and accuracy", function()
    local common = " samples/digits_dp.lua --epochs 2 --hidden 64 --min-accuracy 0.8 --checkpoint "
    local s1, t1 = run("luajit" .. common .. sh_quote(tmp .. "/dp1.npz"), 300)
    local s2, t2 = run("mpirun -np 2 scripts/halua" .. common .. sh_quote(tmp .. "/dp2.npz"), 300)
    if s1 ~= 0 then print(t1) end
    if s2 ~= 0 then print(t2) end
    assert.are.equal(0, s1)
    assert.are.equal(0, s2)
    local acc1 = t1:match("test accuracy ([%d.]+)%% after 2 epochs on 1 ranks")
    local acc2 = t2:match("test accuracy ([%d.]+)%% after 2 epochs on 2 ranks")
    assert.is_not_nil(acc1)
    assert.are.equal(acc1, acc2)
    local _, printed = t2:gsub("after 2 epochs", "")
    assert.are.equal(1, printed)   -- rank 1 prints, rank 2 does not
    local a, b = hl.loadz(tmp .. "/dp1.npz"), hl.loadz(tmp .. "/dp2.npz")
    for _, k in ipairs({"w1", "b1", "w2", "b2"}) do
      local err = hl.max(hl.abs(a[k] - b[k])):item()
      assert(err < 1e-4, string.format("%s differs by %g", k, err))
      assert(hl.max(hl.abs(a[k])):item() > 1e-3)
    end
  end)
end)
