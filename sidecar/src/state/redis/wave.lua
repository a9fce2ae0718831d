-- A never-seen domain signed up on its own mail server (see state/signups.rs, "Waves").
-- KEYS[1]  the server's set of new domains: zset, domain hash -> time of its last signup
-- ARGV[1] the domain's hash   ARGV[2] now (Unix seconds)   ARGV[3] the window (s)
-- ARGV[4] the most domains kept
-- Returns {distinct new domains in the window, this one included; 1 if it was not in it}.
local now, window, kept = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - window)
local added = 0
local seen = tonumber(redis.call('ZSCORE', KEYS[1], ARGV[1]))
if not seen then
  added = 1
  redis.call('ZADD', KEYS[1], now, ARGV[1])
elseif seen < now then
  redis.call('ZADD', KEYS[1], now, ARGV[1])
end
local n = redis.call('ZCARD', KEYS[1])
if n > kept then
  redis.call('ZREMRANGEBYRANK', KEYS[1], 0, n - kept - 1)
  n = kept
end
redis.call('EXPIRE', KEYS[1], window)
return {n, added}
