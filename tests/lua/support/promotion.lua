-- The dtype two arrays promote to (README "dtypes"): bool < {uint8, int8} < int32 < int64 <
-- {float16, bfloat16} < float32 < float64; int8 with uint8 gives int32, float16 with bfloat16
-- float32. The specs' expectation, written once.
local RANK = {bool = 0, uint8 = 1, int8 = 1, int32 = 2, int64 = 3, float16 = 4, bfloat16 = 4, float32 = 5, float64 = 6}
return function(a, b)
  if a == b then return a end
  if RANK[a] == RANK[b] then return RANK[a] == 1 and "int32" or "float32" end
  return RANK[a] > RANK[b] and a or b
end
