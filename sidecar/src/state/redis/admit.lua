-- Admission of one lookup for one API key, atomically (see StateStore::admit).
-- KEYS[1] usage counter of the UTC day   KEYS[2] burst window (zset of ms)   KEYS[3] sequence
-- ARGV[1] daily quota   ARGV[2] burst (0: unlimited, no window kept)   ARGV[3] now (ms)   ARGV[4] window (ms)
-- ARGV[5] usage TTL (s)   ARGV[6] units of quota (a lookup: 1; a batch: its valid inputs)
-- Returns {0, used} admitted, {1, used} quota exceeded, {2, retry_after_ms} rate limited.
local quota, burst = tonumber(ARGV[1]), tonumber(ARGV[2])
local now, window = tonumber(ARGV[3]), tonumber(ARGV[4])
local units = tonumber(ARGV[6])
local used = tonumber(redis.call('GET', KEYS[1]) or '0')
if used + units > quota then
  return {1, used}
end
if burst > 0 then
  redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now - window)
  if redis.call('ZCARD', KEYS[2]) >= burst then
    local oldest = redis.call('ZRANGE', KEYS[2], 0, 0, 'WITHSCORES')
    return {2, math.max(1, tonumber(oldest[2]) + window - now)}
  end
  local seq = redis.call('INCR', KEYS[3])
  redis.call('ZADD', KEYS[2], now, ARGV[3] .. '-' .. seq)
  redis.call('PEXPIRE', KEYS[2], window * 2)
end
used = redis.call('INCRBY', KEYS[1], units)
redis.call('EXPIRE', KEYS[1], ARGV[5])
return {0, used}
