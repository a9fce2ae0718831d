-- Counts a lookup of a domain that needs review, and keeps the queue bounded (state/queue.rs),
-- atomically: every key is under the hash tag {review}.
-- KEYS[1] first seen (zset)  KEYS[2] causes (hash of JSON)  KEYS[3] lookups (hash)  KEYS[4] last
-- seen (hash)  KEYS[5] rank of the undecided (zset)  KEYS[6] decided (set)  KEYS[7] dropped (hash)
-- ARGV[1] domain  ARGV[2] now  ARGV[3] the cause as JSON  ARGV[4] likelihood  ARGV[5] capacity
-- Returns the domain's lookups.
local d, now = ARGV[1], tonumber(ARGV[2])
local function bits(x)
  local b = 0
  while x > 0 do b = b + 1; x = math.floor(x / 2) end
  return b
end
-- Priority (likelihood x the bit length of lookups), then last seen: one exact integer.
local function rank(likelihood, lookups, seen)
  return string.format('%.0f', likelihood * bits(lookups) * 4294967296 + seen)
end
local new = redis.call('ZADD', KEYS[1], 'NX', now, d)
redis.call('HSET', KEYS[2], d, ARGV[3])
local n = redis.call('HINCRBY', KEYS[3], d, 1)
local last = math.max(tonumber(redis.call('HGET', KEYS[4], d) or '0'), now)
redis.call('HSET', KEYS[4], d, last)
if redis.call('SISMEMBER', KEYS[6], d) == 0 then
  redis.call('ZADD', KEYS[5], rank(tonumber(ARGV[4]), n, last), d)
end
if new == 1 then
  local over = redis.call('ZCARD', KEYS[1]) - tonumber(ARGV[5])
  while over > 0 do
    -- Decided entries first, then the lowest rank; the undecided ones are counted by reason.
    local victim = redis.call('SRANDMEMBER', KEYS[6])
    if not victim then
      victim = redis.call('ZRANGE', KEYS[5], 0, 0)[1]
      if not victim then break end
      local cause = redis.call('HGET', KEYS[2], victim)
      local reason = cause and cjson.decode(cause).reason or 'ambiguous'
      redis.call('HINCRBY', KEYS[7], reason, 1)
    end
    redis.call('ZREM', KEYS[1], victim)
    redis.call('ZREM', KEYS[5], victim)
    redis.call('SREM', KEYS[6], victim)
    redis.call('HDEL', KEYS[2], victim)
    redis.call('HDEL', KEYS[3], victim)
    redis.call('HDEL', KEYS[4], victim)
    over = over - 1
  end
end
return n
