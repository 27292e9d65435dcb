-- A small character-level transformer trained on a text that ships with Debian (the GPL, version
-- 3, by default): token and position embeddings, pre-norm blocks of causal multi-head attention
-- and a GELU MLP, AdamW with a warmup-cosine schedule and global-norm clipping. The whole step
-- (forward, loss, gradient, clipping, update) is one jitted function; at the end the model
-- continues a line of the text, one sampled character at a time. The step is about 1,600 ops with
-- the defaults, and its first compile takes minutes (--layers 1 roughly halves it); the compile
-- cache keeps it for later runs.
--
--   luajit samples/transformer.lua [--epochs N] [--steps N] [--batch N] [--seq N] [--dim N]
--                                  [--heads N] [--layers N] [--lr X] [--seed N] [--generate N]
--                                  [--text PATH] [--max-loss X]
local hl = require "halua"
local here = debug.getinfo(1, "S").source:match("^@(.*/)") or "./"
package.path = here .. "?.lua;" .. package.path
local digits = require "digits"                 -- for its option parser and clock

local opts = digits.options("transformer", {
  epochs = 8, steps = 50, batch = 32, seq = 64, dim = 64, heads = 4, layers = 2, lr = 3e-3, seed = 0,
  generate = 120, text = "/usr/share/common-licenses/GPL-3", max_loss = 0},
  "[--epochs N] [--steps N] [--batch N] [--seq N] [--dim N] [--heads N] [--layers N] [--lr X] [--seed N] " ..
  "[--generate N] [--text PATH] [--max-loss X]")
if opts.dim % opts.heads ~= 0 then error("halua: transformer: --dim must be a multiple of --heads", 0) end

local t_start = digits.now()
local f = io.open(opts.text, "rb")
if not f then error("halua: transformer: cannot read " .. opts.text .. " (pass --text PATH)", 0) end
local text = f:read("*a"):gsub("%s+", " ")      -- one line: the layout of the licence is not the point
f:close()

-- the vocabulary: every byte the text uses, ids 1-based
local chars, id_of = {}, {}
for c in text:gmatch(".") do
  if not id_of[c] then chars[#chars + 1] = c; id_of[c] = true end
end
table.sort(chars)
for i, c in ipairs(chars) do id_of[c] = i end
local ids = {}
for i = 1, #text do ids[i] = id_of[text:sub(i, i)] end
local data = hl.array(ids, "int32")
local V, T, D, H = #chars, opts.seq, opts.dim, opts.heads
print(string.format("transformer: %d characters of %s, vocabulary %d; %d layers, dim %d, %d heads, context %d",
                    #text, opts.text, V, opts.layers, D, H, T))

---------------------------------------------------------------- the model

local key = hl.random.key(opts.seed)
local function next_key()
  local ks = hl.random.split(key)
  key = ks[1]
  return ks[2]
end
local function dense(n_in, n_out) return hl.nn.init.normal(next_key(), {n_in, n_out}, 1 / math.sqrt(n_in)) end

-- each block's parameters stacked along a leading layer axis: a few large leaves rather than a
-- dozen per layer (fewer, larger arrays: fewer buffers for the compiled step to pass around)
local L = opts.layers
local function stack(make)
  local t = {}
  for l = 1, L do t[l] = make() end
  return hl.stack(t, 1)
end
local params = {tok = hl.nn.init.normal(next_key(), {V, D}, 0.1), pos = hl.nn.init.normal(next_key(), {T, D}, 0.1),
                ln_g = hl.ones(D), ln_b = hl.zeros(D), out = dense(D, V),
                blocks = {ln1_g = hl.ones({L, D}), ln1_b = hl.zeros({L, D}), qkv = stack(function() return dense(D, 3 * D) end),
                          proj = stack(function() return dense(D, D) * (1 / math.sqrt(2 * L)) end),
                          ln2_g = hl.ones({L, D}), ln2_b = hl.zeros({L, D}), fc = stack(function() return dense(D, 4 * D) end),
                          fc_b = hl.zeros({L, 4 * D}), fc2 = stack(function() return dense(4 * D, D) * (1 / math.sqrt(2 * L)) end),
                          fc2_b = hl.zeros({L, D})}}

-- logits [B, T, V] of token ids [B, T]
local function logits(p, x)
  local b, t = x.shape[1], x.shape[2]
  local h = hl.nn.embedding(p.tok, x) + p.pos[{{1, t}}]
  for l = 1, L do
    local blk = {}
    for name, w in pairs(p.blocks) do blk[name] = w[l] end
    local qkv = hl.reshape(hl.matmul(hl.nn.layer_norm(h, blk.ln1_g, blk.ln1_b), blk.qkv), {b, t, 3, H, D / H})
    local q, k, v = qkv[{{}, {}, 1}], qkv[{{}, {}, 2}], qkv[{{}, {}, 3}]
    local a = hl.nn.dot_product_attention(q, k, v, {causal = true})     -- [B, T, H, D/H]
    h = h + hl.matmul(hl.reshape(a, {b, t, D}), blk.proj)
    local m = hl.nn.gelu(hl.matmul(hl.nn.layer_norm(h, blk.ln2_g, blk.ln2_b), blk.fc) + blk.fc_b)
    h = h + hl.matmul(m, blk.fc2) + blk.fc2_b
  end
  return hl.matmul(hl.nn.layer_norm(h, p.ln_g, p.ln_b), p.out)
end

local function loss(p, x, y) return hl.nn.cross_entropy(logits(p, x), y) end

---------------------------------------------------------------- training

local total = opts.epochs * opts.steps
local warmup = math.max(1, math.floor(total / 10))
local opt = hl.optim.adamw(total > warmup and hl.optim.warmup_cosine_decay(opts.lr, warmup, total, opts.lr / 10) or opts.lr,
                           {weight_decay = 1e-2})
local step = hl.jit(function(p, state, x, y)
  local l, g = hl.value_and_grad(loss)(p, x, y)
  g = hl.optim.clip_by_global_norm(g, 1.0)
  local new_p, new_state = opt.update(g, state, p)
  return new_p, new_state, l
end, {name = "transformer step"})

-- a batch of random windows: inputs [B, T] and the next characters as targets
math.randomseed(opts.seed + 1)
local offsets = hl.arange(T + 1, "int32")
local function batch()
  local starts = {}
  for i = 1, opts.batch do starts[i] = {math.random(1, #text - T - 1)} end
  local w = hl.take(data, hl.array(starts, "int32") + offsets)        -- [B, T + 1]
  return w[{{}, {1, T}}], w[{{}, {2, T + 1}}]
end

local eval_x, eval_y = batch()
local eval_loss = hl.jit(loss)
local first = eval_loss(params, eval_x, eval_y):item()
print(string.format("initial loss %.4f (log %d = %.4f)", first, V, math.log(V)))
local state = opt.init(params)
local last
for epoch = 1, opts.epochs do
  local t0, sum = digits.now(), 0
  for _ = 1, opts.steps do
    local x, y = batch()
    local l
    params, state, l = step(params, state, x, y)
    sum = sum + l:item()
  end
  last = eval_loss(params, eval_x, eval_y):item()
  print(string.format("epoch %3d  train loss %.4f  held batch loss %.4f  (%d steps in %.2f s)", epoch, sum / opts.steps,
                      last, opts.steps, digits.now() - t0))
end

---------------------------------------------------------------- generation

-- continue the text's first T characters: each new character sampled from the model's
-- distribution after the last T, one jitted forward pass per character
local next_logits = hl.jit(function(p, x) return logits(p, x)[{1, T}] end)
local window, out = {}, {}
for i = 1, T do window[i] = ids[i] end
local gkey = hl.random.key(opts.seed + 7)
for i = 1, opts.generate do
  local lg = next_logits(params, hl.array({window}, "int32"))
  local c = hl.random.categorical(hl.random.fold_in(gkey, i), lg / 0.8):item()
  c = math.floor(c)
  out[#out + 1] = chars[c]
  table.remove(window, 1)
  window[T] = c
end
print("prompt:    " .. text:sub(1, T))
print("generated: " .. table.concat(out))
print(string.format("loss %.4f -> %.4f, %.1f s in all", first, last, digits.now() - t_start))
if opts.max_loss > 0 and not (last <= opts.max_loss) then
  error(string.format("halua: transformer: loss %.4f is above --max-loss %.4f", last, opts.max_loss), 0)
end
