-- Crash safety of checkpoints: a process killed with SIGKILL at any moment of hl.savez (or
-- hl.save) never costs the file it was replacing. A child process (fork) saves a large
-- checkpoint over the previous one and is killed after a seeded random delay spread over the
-- whole time a save takes (measured first): before it opens its temporary file, while it writes
-- or flushes it, and after the rename. After each kill the file must load and hold exactly the
-- previous checkpoint or exactly the new one, never a mix and never an error. The kills that
-- landed mid-write are counted by the temporary files they left (path.tmp-PID-N), and enough of
-- them must have, so that the test cannot pass by killing always too early or too late; the next
-- successful save removes those files. The figures are printed (docs cite them).
local hl = require "halua"
local ffi = require "ffi"

-- libc's functions as pointers of this file's own types (looked up with dlsym): a declaration in
-- ffi.C is global to the process, and other specs declare some of these with types of theirs
pcall(ffi.cdef, "void *dlsym(void *, const char *);")
local function libc(name, type) return ffi.cast(type, ffi.C.dlsym(nil, name)) end
local C = {
  clock_gettime = libc("clock_gettime", "int (*)(int, long *)"),
  fork = libc("fork", "int (*)(void)"),
  kill = libc("kill", "int (*)(int, int)"),
  waitpid = libc("waitpid", "int (*)(int, int *, int)"),
  _exit = libc("_exit", "void (*)(int)"),
  usleep = libc("usleep", "int (*)(unsigned int)"),
  getpid = libc("getpid", "int (*)(void)"),
  mkdtemp = libc("mkdtemp", "char *(*)(char *)"),
  open = libc("open", "int (*)(const char *, int)"),
  close = libc("close", "int (*)(int)"),
  flock = libc("flock", "int (*)(int, int)"),
}
local SIGKILL, CLOCK_MONOTONIC, O_RDWR, LOCK_EX = 9, 1, 2, 2

local function now()
  local ts = ffi.new("long[2]")   -- struct timespec: seconds, nanoseconds
  C.clock_gettime(CLOCK_MONOTONIC, ts)
  return tonumber(ts[0]) + tonumber(ts[1]) * 1e-9
end

local function q(s) return "'" .. s:gsub("'", "'\\''") .. "'" end

local function lines(cmd)
  local p = assert(io.popen(cmd))
  local t = {}
  for l in p:lines() do t[#t + 1] = l end
  p:close()
  return t
end

-- a fresh directory, removed at the end
local function tempdir()
  local buf = ffi.new("char[64]", "/tmp/halua-crash-XXXXXX")
  assert(C.mkdtemp(buf) ~= nil, "mkdtemp failed")
  return ffi.string(buf)
end

-- the names in dir that start with prefix
local function names(dir, prefix)
  local out = {}
  for _, n in ipairs(lines("ls -A " .. q(dir))) do
    if n:sub(1, #prefix) == prefix then out[#out + 1] = n end
  end
  return out
end

-- a child process runs f (then ends without returning to the suite); the parent gets its pid
local function spawn(f)
  io.stdout:flush()
  io.stderr:flush()
  local pid = C.fork()
  assert(pid >= 0, "fork failed")
  if pid == 0 then
    local ok = pcall(f)
    C._exit(ok and 0 or 3)
  end
  return pid
end

-- how a child ended: "killed" (by SIGKILL), "exited" (status 0, the save done), or "failed"
local function reap(pid)
  local st = ffi.new("int[1]")
  assert(C.waitpid(pid, st, 0) == pid, "waitpid failed")
  local s = st[0]
  if bit.band(s, 0x7f) == SIGKILL then return "killed" end
  if bit.band(s, 0x7f) == 0 and bit.rshift(bit.band(s, 0xff00), 8) == 0 then return "exited" end
  return "failed"
end

local function same(a, b)
  return a.dtype == b.dtype and table.concat(a.shape, ",") == table.concat(b.shape, ",") and
         (a.size == 0 or hl.all(hl.eq(a:to("cpu"), b:to("cpu"))):item())   -- (a file loads onto the default device)
end

-- which of the candidate checkpoints t is (its index), or nil with what differs
local function which(t, candidates)
  for i, c in ipairs(candidates) do
    local all = true
    for k, v in pairs(c) do
      if not t[k] or not same(t[k], v) then all = false break end
    end
    for k in pairs(t) do if c[k] == nil then all = false end end
    if all then return i end
  end
  return nil
end

-- two checkpoints of ~64 MiB in several arrays of several dtypes; every array differs between
-- them, so a file mixing their members matches neither. Made concrete on the host (loaded from a
-- file), so that a forked child's save only writes bytes.
local function checkpoints(dir, scale)
  local out = {}
  for g = 1, 2 do
    local key = hl.random.key(1000 + g)
    local k = hl.random.split(key, 5)
    local t = {
      w1 = hl.random.normal(k[1], {1024 * scale, 1024}),                        -- float32
      w2 = hl.random.normal(k[2], {512 * scale, 512}, "float64"),               -- float64
      emb = hl.random.normal(k[3], {256 * scale, 1024}),
      steps = hl.random.randint(k[4], {64 * scale, 1024}, 0, 2 ^ 30, "int32"),
      mask = hl.random.bernoulli(k[5], 0.5, {1024, 256}),                       -- bool
      b = hl.full({1024}, g),
    }
    local p = dir .. "/gen" .. g .. ".npz"
    hl.savez(p, t)
    out[g] = {}   -- on the host also where HALUA_DEVICE=cuda: a forked child cannot use its parent's GPU
    for name, v in pairs(hl.loadz(p)) do out[g][name] = v:to("cpu") end
    os.remove(p)
  end
  return out
end

local function mib(t)
  local n = 0
  if hl.core.is_array(t) then t = {t} end
  for _, v in pairs(t) do n = n + v.size * ({float32 = 4, float64 = 8, int32 = 4, bool = 1})[v.dtype] end
  return n / 2 ^ 20
end

-- Kills `n` children, each saving gens[next] over path, after delays uniform in 0..1.2 x the
-- measured save time. At least a quarter of the kills must land mid-write; how many do depends on
-- the machine's load of the moment (the part of a save spent before its temporary file varies),
-- so while fewer have, it kills more, up to 4n, rather than fail on a draw. save(path, value), load(path) -> value, same_as(value, candidates) -> i.
local function kill_test(label, dir, path, gens, n, seed, save, load, same_as)
  local base = path:match("[^/]*$")
  -- the save's duration: the median of five children's, from the fork to the save's return (the
  -- child notes the time: the clock is the machine's), on this very path, each followed by a load
  -- as in the loop below (the flush to the disk takes longer while the previous one's goes on)
  local times, stamp = {}, dir .. "/saved-at"
  for i = 1, 5 do
    local t0 = now()
    local pid = spawn(function()
      save(path, gens[i % 2 + 1])
      local f = assert(io.open(stamp, "w"))
      f:write(string.format("%.9f", now()))
      f:close()
    end)
    assert.are.equal("exited", reap(pid))
    local f = assert(io.open(stamp))
    times[i] = tonumber(f:read("*a")) - t0
    f:close()
    os.remove(stamp)
    load(path)
  end
  table.sort(times)
  local d = times[3]
  local have = 2   -- gens[2] was saved last
  math.randomseed(seed)
  local count = {before = 0, mid = 0, after = 0}
  local t_start = now()
  local need, i = math.ceil(n / 4), 0
  while i < n or (count.mid < need and i < 4 * n) do
    i = i + 1
    local want = 3 - have
    local delay = math.random() * 1.2 * d
    local pid = spawn(function() save(path, gens[want]) end)
    C.usleep(math.floor(delay * 1e6))
    C.kill(pid, SIGKILL)
    local how = reap(pid)
    assert(how ~= "failed", label .. ": kill " .. i .. ": the child's save failed")
    local left = names(dir, base .. ".tmp-" .. pid .. "-")
    local ok, v = pcall(load, path)
    assert(ok, label .. ": kill " .. i .. " after " .. string.format("%.3f", delay) .. " s: the file does not load: " .. tostring(v))
    local got = same_as(v, gens)
    assert(got, label .. ": kill " .. i .. ": the file holds neither the previous checkpoint nor the new one")
    if #left > 0 then
      -- a temporary file left: the rename had not happened, so the file is the previous one
      assert.are.equal(have, got, label .. ": kill " .. i .. " left a temporary file, yet the file was replaced")
      count.mid = count.mid + 1
    elseif got == want then
      count.after = count.after + 1
    else
      assert.are.equal("killed", how, label .. ": a child whose save ended left the previous file")
      count.before = count.before + 1
    end
    have = got
  end
  local elapsed = now() - t_start
  -- the next successful save removes what the killed saves left
  save(path, gens[1])
  local stale = names(dir, base .. ".tmp-")
  print(string.format("\n%s: %.1f MiB saved in %.3f s (a child's, median of 5; %.3f to %.3f); %d kills after 0..%.3f s: " ..
                      "%d before the temporary file, %d mid-write, %d after the rename; %.1f s",
                      label, mib(gens[1]), d, times[1], times[5], i, 1.2 * d, count.before, count.mid, count.after, elapsed))
  assert.are.same({}, stale, label .. ": temporary files left after a successful save")
  assert.truthy(count.mid >= need,
                string.format("%s: only %d of %d kills landed mid-write (save %.3f s)", label, count.mid, i, d))
  return count
end

describe("crash safety", function()
  local dir, gens
  before_each(function()
    dir = tempdir()
    gens = gens or checkpoints(dir, 8)
  end)
  after_each(function() os.execute("rm -rf " .. q(dir)) end)
  teardown(function() gens = nil end)

  it("savez killed (SIGKILL) at 50 random points of a large checkpoint's save leaves the previous or the new file, whole", function()
    kill_test("savez", dir, dir .. "/ckpt.npz", gens, 50, 20240611, hl.savez, hl.loadz, which)
  end)

  it("save (.npy) killed at 20 random points likewise", function()
    local arrays = {gens[1].w1, gens[2].w1}
    kill_test("save", dir, dir .. "/w.npy", arrays, 20, 7, hl.save, hl.load, function(v, c)
      for i, x in ipairs(c) do if same(v, x) then return i end end
    end)
  end)

  it("a save removes the temporary files of its path whose process has ended, and no others", function()
    local p = dir .. "/ckpt.npz"
    local dead = spawn(function() end)
    assert.are.equal("exited", reap(dead))
    local function touch(name)
      local f = assert(io.open(dir .. "/" .. name, "wb"))
      f:write("partial")
      f:close()
    end
    local stale = {"ckpt.npz.tmp-" .. dead .. "-0", "ckpt.npz.tmp-" .. dead .. "-17"}
    local kept = {
      "ckpt.npz.tmp-1-0",                        -- a process that runs (init)
      "ckpt.npz.tmp-" .. C.getpid() .. "-99",    -- this one
      "ckpt.npz.tmp-" .. dead .. "-0.bak",       -- not the engine's naming
      "ckpt.npz.tmp-x-1", "ckpt.npz.tmp-", "ckpt.npz.tmp-" .. dead,
      "other.npz.tmp-" .. dead .. "-0",          -- another file's
      "ckpt.npz.tmp-" .. dead .. "-5",           -- locked: a writer on another machine sharing the directory
    }
    for _, n in ipairs(stale) do touch(n) end
    for _, n in ipairs(kept) do touch(n) end
    local fd = C.open(dir .. "/" .. kept[#kept], O_RDWR)
    assert(fd >= 0)
    assert.are.equal(0, C.flock(fd, LOCK_EX))
    hl.savez(p, {w = hl.ones(3)})
    C.close(fd)
    local left = names(dir, "")
    table.sort(left)
    local want = {"ckpt.npz"}
    for _, n in ipairs(kept) do want[#want + 1] = n end
    table.sort(want)
    assert.are.same(want, left)
    -- a failed save removes nothing; hl.save cleans as hl.savez does
    local function exists(name)
      local f = io.open(dir .. "/" .. name, "rb")
      if f then f:close() end
      return f ~= nil
    end
    touch(stale[1])
    assert.is_false(pcall(hl.savez, p, {w = hl.ones(2, "bfloat16")}))
    assert.is_true(exists(stale[1]))
    hl.save(dir .. "/ckpt.npz", hl.ones(2))
    assert.is_false(exists(stale[1]))
    assert.are.same({2}, hl.load(p).shape)
  end)
end)
