-- A small convolutional network on the 8x8 digits: two 3x3 convolutions with max pooling, then a
-- dense layer (NCHW throughout). As in digits_mlp.lua, the whole training step is one jitted
-- function; the convolutions lower to im2col matmuls inside that one pipeline.
--
--   luajit samples/digits_cnn.lua [--epochs N] [--channels N] [--batch N] [--lr X] [--seed N]
--                                 [--checkpoint PATH] [--min-accuracy P]
local hl = require "halua"
local here = debug.getinfo(1, "S").source:match("^@(.*/)") or "./"
package.path = here .. "?.lua;" .. package.path
local digits = require "digits"

local opts = digits.options("digits_cnn", {
  epochs = 15, channels = 32, batch = 32, lr = 3e-3, seed = 0, min_accuracy = 0.98,
  checkpoint = (os.getenv("TMPDIR") or "/tmp") .. "/halua_digits_cnn.npz"},
  "[--epochs N] [--channels N] [--batch N] [--lr X] [--seed N] [--checkpoint PATH] [--min-accuracy P]")

local t_start = digits.now()
local xtr, ytr, xte, yte = digits.load()
local ctr, cte = digits.classes(ytr), digits.classes(yte)
-- standardised pixels (statistics of the training set only; +0.5 keeps the always-blank corners at 0)
local mean, scale = hl.mean(xtr, 1), hl.std(xtr, 1) + 0.5
-- images as NCHW: one channel of 8x8
xtr = hl.reshape((xtr - mean) / scale, {xtr.shape[1], 1, 8, 8})
xte = hl.reshape((xte - mean) / scale, {xte.shape[1], 1, 8, 8})
local ntrain = xtr.shape[1]
local c1, c2 = opts.channels, 2 * opts.channels
print(string.format("digits: %d training and %d test images of 8x8; CNN conv3x3(%d)-pool-conv3x3(%d)-pool-dense(10), " ..
                    "Adam lr %g (cosine decay), batch %d", ntrain, xte.shape[1], c1, c2, opts.lr, opts.batch))

-- parameters: a pytree (a Lua table of arrays)
local keys = hl.random.split(hl.random.key(opts.seed), 3)
local params = {
  conv1 = hl.nn.init.glorot(keys[1], {c1, 1, 3, 3}), bias1 = hl.zeros(c1),
  conv2 = hl.nn.init.glorot(keys[2], {c2, c1, 3, 3}), bias2 = hl.zeros(c2),
  dense = hl.nn.init.glorot(keys[3], {c2 * 4, 10}), bias3 = hl.zeros(10),
}

local function logits(p, x)
  local h = hl.nn.relu(hl.nn.conv2d(x, p.conv1, {padding = 1, bias = p.bias1}))        -- N, c1, 8, 8
  h = hl.nn.max_pool2d(h, 2)                                                          -- N, c1, 4, 4
  h = hl.nn.relu(hl.nn.conv2d(h, p.conv2, {padding = 1, bias = p.bias2}))             -- N, c2, 4, 4
  h = hl.nn.max_pool2d(h, 2)                                                          -- N, c2, 2, 2
  return hl.matmul(hl.reshape(h, {h.shape[1], c2 * 4}), p.dense) + p.bias3
end
-- Adam on minibatches, with progress lines, the test accuracy and a checkpoint round trip
-- (samples/digits.lua): the step, from logits to the updated parameters, is one jitted function
digits.train("digits_cnn", opts, params, logits, {xtr = xtr, ctr = ctr, xte = xte, cte = cte, t_start = t_start})
