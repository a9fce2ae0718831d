-- Takes a queued domain out of the ranked queue when a decision covers it, or puts it back
-- (state/queue.rs). KEYS as note.lua's first six. ARGV[1] domain  ARGV[2] '1' decided, '0' not.
local d = ARGV[1]
if not redis.call('ZSCORE', KEYS[1], d) then return 0 end
if ARGV[2] == '1' then
  redis.call('SADD', KEYS[6], d)
  redis.call('ZREM', KEYS[5], d)
  return 1
end
redis.call('SREM', KEYS[6], d)
local cause = redis.call('HGET', KEYS[2], d)
local likelihood = cause and tonumber(cjson.decode(cause).likelihood) or 100
local n = tonumber(redis.call('HGET', KEYS[3], d) or '1')
local last = tonumber(redis.call('HGET', KEYS[4], d) or '0')
local b = 0
while n > 0 do b = b + 1; n = math.floor(n / 2) end
redis.call('ZADD', KEYS[5], string.format('%.0f', likelihood * b * 4294967296 + last), d)
return 1
