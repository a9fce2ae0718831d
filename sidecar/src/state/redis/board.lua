-- Values ranked on their boards (see state/signups.rs, "The busiest").
-- KEYS[2i-1], KEYS[2i]  board i's counts (zset: value -> count) and times (zset: value -> when)
-- ARGV[1] now (Unix seconds); then per board i, from ARGV[2 + 5(i-1)]: the value, its count,
-- the board's lifetime (s), its bucket (s), the most values kept.
-- Returns each board's floor: its lowest count when full, else 0.
local now = tonumber(ARGV[1])
local out = {}
for i = 1, #KEYS / 2 do
  local counts, times = KEYS[2 * i - 1], KEYS[2 * i]
  local a = 2 + 5 * (i - 1)
  local value, count = ARGV[a], tonumber(ARGV[a + 1])
  local life, bucket, kept = tonumber(ARGV[a + 2]), tonumber(ARGV[a + 3]), tonumber(ARGV[a + 4])
  -- values whose last count left the window go (at most the board's size)
  for _, gone in ipairs(redis.call('ZRANGEBYSCORE', times, '-inf', now - life)) do
    redis.call('ZREM', counts, gone)
    redis.call('ZREM', times, gone)
  end
  local old = tonumber(redis.call('ZSCORE', counts, value))
  local at = tonumber(redis.call('ZSCORE', times, value))
  if old and at and at > now - bucket and old > count then count = old end
  if not at or at < now then at = now end
  redis.call('ZADD', counts, count, value)
  redis.call('ZADD', times, at, value)
  local n = redis.call('ZCARD', counts)
  if n > kept then
    for _, gone in ipairs(redis.call('ZRANGE', counts, 0, n - kept - 1)) do
      redis.call('ZREM', counts, gone)
      redis.call('ZREM', times, gone)
    end
    n = kept
  end
  local floor = 0
  if n >= kept then floor = tonumber(redis.call('ZRANGE', counts, 0, 0, 'WITHSCORES')[2]) end
  redis.call('EXPIRE', counts, life)
  redis.call('EXPIRE', times, life)
  out[#out + 1] = floor
end
return out
