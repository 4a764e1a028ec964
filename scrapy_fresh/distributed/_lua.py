"""Server-side Lua scripts of the Redis store and the Redis frontier (internal).

Every script gets the key prefix as ``ARGV[1]`` and derives its keys from it, so that
one store is one prefix (in a Redis Cluster, give the prefix a hash tag such as
``{news}:fresh`` so that all its keys live in one slot). Records are stored as a short
header that the scripts can read and change, followed by JSON the scripts never
decode or re-encode (Lua's cjson would round floats to 14 digits)::

    <status>|<flags>|<doc_id>|<next_due>|<in_flight_since>|<priority>|<len(host)>|<host><json>

``status`` is 0 queued, 1 idle, 2 in flight, 3 gone; ``flags`` is ``n`` (never
crawled: the discovery stream) or ``r`` (re-crawl), then ``0`` if the record has no
visits (released to queued) else ``1``. Times and the priority are Python ``repr``
floats (``inf`` included), passed to Redis as they are.

Keys under the prefix ``P`` (``P:rq:*`` and ``P:hh:*`` belong to the frontier, kept
up to date by every store write so that both always agree):

==================  ======  ======================================================
``P:pages``         hash    20-byte key -> record
``P:ids:<b>``       hash    doc_id -> key, 256 doc ids per hash ``b = doc_id // 256``
                            (small hashes are compact; iteration, doc_id uniqueness)
``P:due``           zset    queued and idle keys by next_due (ties by key)
``P:flight``        zset    in-flight keys by in_flight_since (unset: ``-inf``)
``P:counts``        hash    status -> number of records
``P:lastid``        string  the highest doc_id ever given
``P:upgraded``      hash    one-time upgrades done on this store (``gone_due``)
``P:sites``         hash    host -> site record (JSON)
``P:wm``            string  frontier watermark: every due key with next_due <= it
                            is in the ready queue of its host
``P:rq:<s>:<h>``    zset    ready queue of host h in stream s (n/r), by -priority
``P:hh:<s>``        zset    hosts with a ready queue in stream s, by next-allowed time
``P:hnext``         hash    host -> next-allowed contact time
``P:hdelay``        hash    host -> delay between two requests (Crawl-delay)
``P:hhold``         hash    host -> end of the hold of its request in flight
``P:served``        hash    pops per stream (the discovery/refresh mix)
``P:outcomes``      hash    committed visits per outcome
``P:sturn:<h>``     string  a contended visit's turn at host h's site (expires)
``P:lease``         hash    in-flight key -> its lease token (taken by a pop)
``P:leaseno``       string  pops so far: the nonce of the next pop's lease tokens
==================  ======  ======================================================

A lease token is ``t<pop number>.<i>`` (the i-th URL of that pop): two pops in the same
clock tick get different tokens. The lease still runs out by the pop time (the
``P:flight`` score). A record in flight without a ``P:lease`` entry (taken by an older
version, or marked with :data:`MARK`) is held by the token that equals its
``in_flight_since`` text, as before.
"""

from __future__ import annotations

__all__ = [
    "COMMIT",
    "DELETE",
    "DUE",
    "GIVE_BACK",
    "HOST_DONE",
    "INDEX_GONE",
    "MARK",
    "POP",
    "RELEASE",
    "VALUE_CAS",
    "WRITE",
    "WRITE_IF",
]

_PRELUDE = r"""
local P = ARGV[1]
local K_PAGES, K_IDS, K_DUE = P .. ':pages', P .. ':ids', P .. ':due'
local K_FLIGHT, K_COUNTS, K_LEASE = P .. ':flight', P .. ':counts', P .. ':lease'
local WM = tonumber(redis.call('GET', P .. ':wm') or '-inf')

local function fmt(x) return string.format('%.17g', x) end

local function parse(v)
  local s, f, d, nd, ifs, pr, hl, pos = string.match(
    v, '^(%d)|(%a%d)|(%d+)|([^|]*)|([^|]*)|([^|]*)|(%d+)|()')
  hl = tonumber(hl)
  return {s = s, f = f, d = d, nd = nd, ifs = ifs, pr = pr,
          host = string.sub(v, pos, pos + hl - 1), v = v, bpos = pos + hl}
end

local function build(r)
  local body = r.body or string.sub(r.v, r.bpos)
  return table.concat({r.s, r.f, r.d, r.nd, r.ifs, r.pr, tostring(#r.host)}, '|')
    .. '|' .. r.host .. body
end

local function rq(st, host) return P .. ':rq:' .. st .. ':' .. host end

local function body_of(v) return string.sub(v, parse(v).bpos) end

-- whether the record body ``body`` is older than the body ``old``: fewer visits, or
-- an older or no last crawl (base.regresses)
local function regresses(old, body)
  local ob = cjson.decode(old)
  local nb = cjson.decode(body)
  local ov, nv = tonumber(ob.v) or 0, tonumber(nb.v) or 0
  if nv < ov then return true end
  local olc, nlc = tonumber(ob.lc), tonumber(nb.lc)
  return olc ~= nil and (nlc == nil or nlc < olc)
end

local function ready_time(host)
  local a = tonumber(redis.call('HGET', P .. ':hnext', host) or '-inf')
  local b = tonumber(redis.call('HGET', P .. ':hhold', host) or '-inf')
  if b > a then return b end
  return a
end

local announced = {}
local function enqueue_ready(key, r)
  local st = string.sub(r.f, 1, 1)
  local queue = rq(st, r.host)
  redis.call('ZADD', queue, -tonumber(r.pr), key)
  if not announced[queue] then
    announced[queue] = true
    redis.call('ZADD', P .. ':hh:' .. st, 'NX', fmt(ready_time(r.host)), r.host)
  end
end

local function unindex(key, r)
  redis.call('HINCRBY', K_COUNTS, r.s, -1)
  if r.s == '0' or r.s == '1' or r.s == '3' then
    redis.call('ZREM', K_DUE, key)
    redis.call('ZREM', rq(string.sub(r.f, 1, 1), r.host), key)
  elseif r.s == '2' then
    redis.call('ZREM', K_FLIGHT, key)
    redis.call('HDEL', K_LEASE, key)
  end
end

-- whether ``token`` holds the lease of the record ``r`` of ``key``
local function holds(key, r, token)
  if r.s ~= '2' then return false end
  local t = redis.call('HGET', K_LEASE, key)
  if t then return t == token end
  return r.ifs == token  -- no nonce: taken by an older version (token = the pop time)
end

local function index(key, r)
  redis.call('HINCRBY', K_COUNTS, r.s, 1)
  if r.s == '0' or r.s == '1' or r.s == '3' then
    redis.call('ZADD', K_DUE, r.nd, key)
    if tonumber(r.nd) <= WM then enqueue_ready(key, r) end
  elseif r.s == '2' then
    redis.call('ZADD', K_FLIGHT, (r.ifs == '' and '-inf') or r.ifs, key)
  end
end

local function release(key, r)
  unindex(key, r)
  if string.sub(r.f, 2, 2) == '0' then r.s = '0' else r.s = '1' end
  r.ifs = ''
  redis.call('HSET', K_PAGES, key, build(r))
  index(key, r)
end

local function ids_bucket(doc)
  return K_IDS .. ':' .. string.format('%.0f', math.floor(tonumber(doc) / 256))
end

local function hex(s)
  return (string.gsub(s, '.', function(c) return string.format('%02x', string.byte(c)) end))
end
"""

#: put_many / add_many. ARGV: P, mode ("put" or "add"), then 9 values per record:
#: key, status, flags, requested doc_id, next_due, in_flight_since, priority, host, json.
#: Returns the input positions written (a put that would move a record back is not:
#: ``regresses``); an error reply ``DOCID`` refuses the whole call.
WRITE = (
    _PRELUDE
    + r"""
local mode = ARGV[2]
local n = (#ARGV - 2) / 9
local last = tonumber(redis.call('GET', P .. ':lastid') or '0')
local docs, skip, seen, taken, seen_body = {}, {}, {}, {}, {}
for i = 0, n - 1 do
  local b = 3 + i * 9
  local key, req = ARGV[b], ARGV[b + 3]
  local old = redis.call('HGET', K_PAGES, key)
  if old or seen[key] then
    if mode == 'add' then skip[i] = true
    elseif (seen_body[key] or old) and regresses(seen_body[key] or body_of(old), ARGV[b + 8]) then
      skip[i] = true
    elseif old then docs[i] = string.match(old, '^%d|%a%d|(%d+)|')
    else docs[i] = seen[key] end
  else
    local doc
    if req == '0' then doc = last + 1 else
      doc = tonumber(req)
      local owner = taken[req] or redis.call('HGET', ids_bucket(req), req)
      if owner then
        return redis.error_reply('DOCID ' .. req .. ' ' .. hex(key) .. ' ' .. hex(owner))
      end
    end
    if doc > last then last = doc end
    local ds = string.format('%.0f', doc)
    taken[ds] = key
    seen[key] = ds
    docs[i] = ds
  end
  if not skip[i] and mode == 'put' then seen_body[key] = ARGV[b + 8] end
end
local out = {}
for i = 0, n - 1 do
  if not skip[i] then
    local b = 3 + i * 9
    local key = ARGV[b]
    local old = redis.call('HGET', K_PAGES, key)
    if old then unindex(key, parse(old)) else redis.call('HSET', ids_bucket(docs[i]), docs[i], key) end
    local r = {s = ARGV[b + 1], f = ARGV[b + 2], d = docs[i], nd = ARGV[b + 4],
               ifs = ARGV[b + 5], pr = ARGV[b + 6], host = ARGV[b + 7], body = ARGV[b + 8]}
    redis.call('HSET', K_PAGES, key, build(r))
    index(key, r)
    out[#out + 1] = i
  end
end
redis.call('SET', P .. ':lastid', string.format('%.0f', last))
return out
"""
)

#: delete. ARGV: P, key. Returns 1 if there was a record.
DELETE = (
    _PRELUDE
    + r"""
local key = ARGV[2]
local old = redis.call('HGET', K_PAGES, key)
if not old then return 0 end
local r = parse(old)
unindex(key, r)
redis.call('HDEL', ids_bucket(r.d), r.d)
redis.call('HDEL', K_PAGES, key)
return 1
"""
)

#: due. ARGV: P, now, limit. Returns key, record, key, record, ...
DUE = (
    _PRELUDE
    + r"""
local keys = redis.call('ZRANGEBYSCORE', K_DUE, '-inf', ARGV[2], 'LIMIT', 0, tonumber(ARGV[3]))
local out = {}
for _, key in ipairs(keys) do
  local v = redis.call('HGET', K_PAGES, key)
  if v then out[#out + 1] = key; out[#out + 1] = v end
end
return out
"""
)

#: upgrade_gone_due. ARGV: P, key, key, ... Gone records (status 3) missing from the due
#: set, written before gone pages were checked again, go in it by their next_due (and in
#: their host's ready queue if the watermark has passed it). Returns how many.
INDEX_GONE = (
    _PRELUDE
    + r"""
local added = 0
for i = 2, #ARGV do
  local key = ARGV[i]
  local v = redis.call('HGET', K_PAGES, key)
  if v then
    local r = parse(v)
    if r.s == '3' and not redis.call('ZSCORE', K_DUE, key) then
      redis.call('ZADD', K_DUE, r.nd, key)
      if tonumber(r.nd) <= WM then enqueue_ready(key, r) end
      added = added + 1
    end
  end
end
return added
"""
)

#: mark_in_flight. ARGV: P, now, key, key, ... Returns how many records were marked.
MARK = (
    _PRELUDE
    + r"""
local marked = 0
for i = 3, #ARGV do
  local key = ARGV[i]
  local v = redis.call('HGET', K_PAGES, key)
  if v then
    local r = parse(v)
    unindex(key, r)
    r.s = '2'
    r.ifs = ARGV[2]
    redis.call('HSET', K_PAGES, key, build(r))
    index(key, r)
    marked = marked + 1
  end
end
return marked
"""
)

#: release_in_flight. ARGV: P, older_than ("" for all), limit.
#: Returns {looked at, released}; call again while ``looked at`` equals ``limit``.
RELEASE = (
    _PRELUDE
    + r"""
local limit = tonumber(ARGV[3])
local keys
local older = nil
if ARGV[2] == '' then
  keys = redis.call('ZRANGE', K_FLIGHT, 0, limit - 1)
else
  older = tonumber(ARGV[2])
  local upper = '(' .. ARGV[2]
  if older == -math.huge then upper = '-inf' end
  keys = redis.call('ZRANGEBYSCORE', K_FLIGHT, '-inf', upper, 'LIMIT', 0, limit)
end
local released = 0
for _, key in ipairs(keys) do
  local r = parse(redis.call('HGET', K_PAGES, key))
  if older == nil or r.ifs == '' or tonumber(r.ifs) < older then
    release(key, r)
    released = released + 1
  end
end
return {#keys, released}
"""
)

#: The frontier's atomic pop. ARGV: P, now, n, lease_secs, default_delay, new_share,
#: batch, hold_secs, then hosts this worker must not be given (its own delay for them
#: runs). With a delay, a host taken is held for ``hold_secs`` or until HOST_DONE. Reaps expired leases, promotes newly due keys into their hosts' ready
#: queues, then takes up to n keys: hosts whose next-allowed time has come, the best
#: priority among the longest-waiting ready hosts, one key per host contact.
#: Returns {{key, record, lease token, ...}, reaped, next host time (of a host it may
#: be given), next due time}.
POP = (
    _PRELUDE
    + r"""
local now_s = ARGV[2]
local now = tonumber(now_s)
local n, lease, ddelay = tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])
local share, B, hold = tonumber(ARGV[6]), tonumber(ARGV[7]), tonumber(ARGV[8])
local skip, nskip = {}, 0
for i = 9, #ARGV do
  skip[ARGV[i]] = true
  nskip = nskip + 1
end

-- 1. leases that ran out go back (their worker died or hung)
local expired = redis.call('ZRANGEBYSCORE', K_FLIGHT, '-inf', '(' .. fmt(now - lease),
                           'LIMIT', 0, B)
for _, key in ipairs(expired) do release(key, parse(redis.call('HGET', K_PAGES, key))) end

-- 2. promote what came due since the watermark
if now > WM then
  local items = redis.call('ZRANGEBYSCORE', K_DUE, '(' .. fmt(WM), now_s, 'WITHSCORES',
                           'LIMIT', 0, B)
  local new_wm = now
  local keys = {}
  if #items >= 2 * B then
    local last = items[#items]
    new_wm = tonumber(last)
    for j = 1, #items, 2 do
      if tonumber(items[j + 1]) < new_wm then keys[#keys + 1] = items[j] end
    end
    for _, key in ipairs(redis.call('ZRANGEBYSCORE', K_DUE, last, last)) do
      keys[#keys + 1] = key
    end
  else
    for j = 1, #items, 2 do keys[#keys + 1] = items[j] end
  end
  for _, key in ipairs(keys) do
    local r = parse(redis.call('HGET', K_PAGES, key))
    enqueue_ready(key, r)
  end
  WM = new_wm
  redis.call('SET', P .. ':wm', fmt(WM))
end

-- 3. take up to n keys, politely and best-first
local K_HNEXT, K_SERVED = P .. ':hnext', P .. ':served'
local served = {n = tonumber(redis.call('HGET', K_SERVED, 'n') or '0'),
                r = tonumber(redis.call('HGET', K_SERVED, 'r') or '0')}

-- Per stream, a binary heap (best priority first) of the hosts that may be contacted
-- now, built once per call from the longest-waiting ready hosts.
local function heap_push(h, item)
  h[#h + 1] = item
  local i = #h
  while i > 1 do
    local p = math.floor(i / 2)
    if h[p][1] <= h[i][1] then break end
    h[p], h[i] = h[i], h[p]
    i = p
  end
end
local function heap_pop(h)
  local top = h[1]
  local last = h[#h]
  h[#h] = nil
  if #h > 0 then
    h[1] = last
    local i = 1
    while true do
      local l, r, m = 2 * i, 2 * i + 1, i
      if l <= #h and h[l][1] < h[m][1] then m = l end
      if r <= #h and h[r][1] < h[m][1] then m = r end
      if m == i then break end
      h[m], h[i] = h[i], h[m]
      i = m
    end
  end
  return top
end

local ready = {}
local function ready_hosts(st)
  if ready[st] then return ready[st] end
  local h = {}
  local heap = P .. ':hh:' .. st
  local cands = redis.call('ZRANGEBYSCORE', heap, '-inf', now_s, 'LIMIT', 0, n + 8 + nskip)
  for _, host in ipairs(cands) do
    local hn = ready_time(host)
    if skip[host] then
      -- the worker cannot contact this host yet: leave it to the others
    elseif hn > now then
      redis.call('ZADD', heap, fmt(hn), host)
    else
      local top = redis.call('ZRANGE', rq(st, host), 0, 0, 'WITHSCORES')
      if #top == 0 then
        redis.call('ZREM', heap, host)
      else
        heap_push(h, {tonumber(top[2]), host})
      end
    end
  end
  ready[st] = h
  return h
end

local function take(st)
  local h = ready_hosts(st)
  while #h > 0 do
    local host = heap_pop(h)[2]
    local heap = P .. ':hh:' .. st
    local hn = ready_time(host)
    if hn > now then  -- contacted through the other stream in this call
      redis.call('ZADD', heap, fmt(hn), host)
    else
      local queue = rq(st, host)
      local got = redis.call('ZPOPMIN', queue)
      if #got > 0 then
        local d = tonumber(redis.call('HGET', P .. ':hdelay', host) or '0')
        if ddelay > d then d = ddelay end
        local top = redis.call('ZRANGE', queue, 0, 0, 'WITHSCORES')
        if d > 0 then
          -- one request at a time per host: held until the visit is recorded (or
          -- the hold runs out), then the delay counts from then (host_done)
          redis.call('HSET', K_HNEXT, host, fmt(now + d))
          local next_s = fmt(now + math.max(d, hold))
          redis.call('HSET', P .. ':hhold', host, next_s)
          if #top > 0 then redis.call('ZADD', heap, next_s, host)
          else redis.call('ZREM', heap, host) end
          local other = 'n'
          if st == 'n' then other = 'r' end
          redis.call('ZADD', P .. ':hh:' .. other, 'XX', 'GT', next_s, host)
        elseif #top > 0 then
          heap_push(h, {tonumber(top[2]), host})
        else
          redis.call('ZREM', heap, host)
        end
        return got[1]
      end
      redis.call('ZREM', heap, host)
    end
  end
  return nil
end

local out = {}
local nonce = 't' .. tostring(redis.call('INCR', P .. ':leaseno')) .. '.'
for _ = 1, n do
  local first, second = 'r', 'n'
  if served.n < share * (served.n + served.r + 1) then first, second = 'n', 'r' end
  local st = first
  local key = take(first)
  if not key then
    st = second
    key = take(second)
  end
  if not key then break end
  served[st] = served[st] + 1
  local v = redis.call('HGET', K_PAGES, key)
  if v then
    local r = parse(v)
    redis.call('ZREM', K_DUE, key)
    redis.call('HINCRBY', K_COUNTS, r.s, -1)
    r.s = '2'
    r.ifs = now_s
    v = build(r)
    redis.call('HSET', K_PAGES, key, v)
    redis.call('ZADD', K_FLIGHT, now_s, key)
    redis.call('HINCRBY', K_COUNTS, '2', 1)
    local token = nonce .. tostring(#out / 3)
    redis.call('HSET', K_LEASE, key, token)
    out[#out + 1] = key
    out[#out + 1] = v
    out[#out + 1] = token
  end
end
redis.call('HSET', K_SERVED, 'n', served.n, 'r', served.r)

-- the next host time leaves out the hosts this worker must not be given (blocked or
-- paused): it would wake this worker at once, again and again, for nothing
local next_time, next_host, next_name = nil, '', ''
for _, st in ipairs({'n', 'r'}) do
  local firsts = redis.call('ZRANGE', P .. ':hh:' .. st, 0, nskip, 'WITHSCORES')
  for j = 1, #firsts, 2 do
    if not skip[firsts[j]] then
      local t = tonumber(firsts[j + 1])
      if next_time == nil or t < next_time then next_time, next_name = t, firsts[j] end
      break
    end
  end
end
if next_time ~= nil then next_host = fmt(next_time) end
local after = redis.call('ZRANGEBYSCORE', K_DUE, '(' .. fmt(WM), '+inf', 'WITHSCORES',
                         'LIMIT', 0, 1)
local next_due = ''
if #after > 0 then next_due = after[2] end
return {out, #expired, next_host, next_due, next_name}
"""
)

#: How long (ms) a worker's turn at a contended site lasts at most (see COMMIT).
SITE_TURN_MS = 1000

#: The site compare-and-set both COMMIT and VALUE_CAS make (see COMMIT): ``site_turn(P,
#: host, check, claim, now_site)`` returns 1 (may write), -2 (the site changed since it
#: was read; a claim takes the free turn) or -3 (another update has the turn).
_SITE_TURN = (
    r"""
local function site_turn(P, host, check, claim, now_site)
  local turn_key = P .. ':sturn:' .. host
  local turn = redis.call('GET', turn_key)
  if turn and turn ~= claim then return -3 end
  if (check == '?' and now_site) or (check ~= '?' and now_site ~= string.sub(check, 2)) then
    if claim ~= '' and not turn then
      redis.call('SET', turn_key, claim, 'PX', """
    + str(SITE_TURN_MS)
    + r""")
    end
    return -2
  end
  return 1
end
"""
)

#: The frontier's atomic commit of visits. ARGV: P, then 14 values per visit: key, lease
#: token (``*``: no lease check), the new record (status, flags, next_due,
#: in_flight_since, priority, host, json), site host, site check, site JSON, outcome
#: (empty: not counted), turn claim (empty: none).
#:
#: The site check makes the site update a compare-and-set: ``-`` leaves the site alone,
#: ``?`` writes it only if the host has no site record yet, ``=`` followed by the stored
#: site value writes it only if that value is still the stored one. A visit that keeps
#: losing the race asks for the site's turn with a claim: on its next conflict the
#: script gives it the turn (``P:sturn:<host>``, for :data:`SITE_TURN_MS` at most) if
#: nobody has it, and while it has it other visits do not change that site, so its next
#: try succeeds; the turn ends when the visit is written (or its lease found lost).
#:
#: Returns ``{codes, sites}``: per visit code 1 (written), 0 (no record any more), -1
#: (lease lost: another worker holds the URL, or it was released), -2 (the site changed
#: since it was read) or -3 (another visit has the site's turn); nothing of a visit that
#: is not written is written. A visit whose record is already exactly the new one counts
#: as written (a retried call whose first try went through). ``sites`` has, per visit,
#: the host's site value after it ('' if none, or if the record is gone), for the next
#: compare-and-set.
COMMIT = (
    _PRELUDE
    + _SITE_TURN
    + r"""
local K_SITES = P .. ':sites'
local codes, sites = {}, {}
for b = 2, #ARGV, 14 do
  local key, token = ARGV[b], ARGV[b + 1]
  local shost, check, claim = ARGV[b + 9], ARGV[b + 10], ARGV[b + 13]
  local code, now_site, turn_key = 1, false, nil
  local old = redis.call('HGET', K_PAGES, key)
  if not old then
    code = 0
  else
    local r = parse(old)
    local nr = {s = ARGV[b + 2], f = ARGV[b + 3], d = r.d, nd = ARGV[b + 4],
                ifs = ARGV[b + 5], pr = ARGV[b + 6], host = ARGV[b + 7], body = ARGV[b + 8]}
    if shost ~= '' then now_site = redis.call('HGET', K_SITES, shost) end
    local held = token == '*' or holds(key, r, token)
    if nr.s == '2' and token ~= '*' and held then nr.ifs = r.ifs end  -- keeps its lease
    if not held then
      if old == build(nr) then code = 2 else code = -1 end
    elseif check ~= '-' then
      code = site_turn(P, shost, check, claim, now_site)
    end
    if code == 1 then
      unindex(key, r)
      redis.call('HSET', K_PAGES, key, build(nr))
      index(key, nr)
      if nr.s == '2' and token ~= '*' then redis.call('HSET', K_LEASE, key, token) end
      if check ~= '-' then
        now_site = ARGV[b + 11]
        redis.call('HSET', K_SITES, shost, now_site)
      end
      if ARGV[b + 12] ~= '' then redis.call('HINCRBY', P .. ':outcomes', ARGV[b + 12], 1) end
    elseif code == 2 then
      code = 1
    end
  end
  if claim ~= '' and code >= -1 then  -- the visit is done with: its turn ends
    turn_key = P .. ':sturn:' .. shost
    if redis.call('GET', turn_key) == claim then redis.call('DEL', turn_key) end
  end
  codes[#codes + 1] = code
  sites[#sites + 1] = now_site or ''
end
return {codes, sites}
"""
)

#: The frontier's give-back of a lease without a visit. ARGV: P, key, token.
#: Returns 1 if released, 0 if the lease was no longer held.
GIVE_BACK = (
    _PRELUDE
    + r"""
local key, token = ARGV[2], ARGV[3]
local old = redis.call('HGET', K_PAGES, key)
if not old then return 0 end
local r = parse(old)
if not holds(key, r, token) then return 0 end
release(key, r)
return 1
"""
)

#: A host's request was answered (its visit recorded): end the hold, and the host may be
#: contacted again one delay from now. ARGV: P, host, now, default_delay.
HOST_DONE = (
    _PRELUDE
    + r"""
local host, now, ddelay = ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4])
redis.call('HDEL', P .. ':hhold', host)
local d = tonumber(redis.call('HGET', P .. ':hdelay', host) or '0')
if ddelay > d then d = ddelay end
local cur = tonumber(redis.call('HGET', P .. ':hnext', host) or '-inf')
if now + d > cur then redis.call('HSET', P .. ':hnext', host, fmt(now + d)) end
local t = fmt(ready_time(host))
redis.call('ZADD', P .. ':hh:n', 'XX', t, host)
redis.call('ZADD', P .. ':hh:r', 'XX', t, host)
return 1
"""
)

#: Compare-and-set writes of records outside a visit (provider signals, request data).
#: ARGV: P, then 9 values per record: key, the stored value it was read as (empty: none
#: read), then the new record (status, flags, next_due, in_flight_since, priority, host,
#: json). Returns ``{codes, values}``, per record code 1 (written; value: the record as
#: stored now), 0 (no record: nothing written), -2 (the record changed since it was read;
#: value: the record now), -5 (the new record is older than the stored one: ``regresses``;
#: nothing written) or -4 (the record is in flight: a worker holds its lease and
#: will write its visit; nothing written; value: the record now). A record's doc_id is
#: kept.
WRITE_IF = (
    _PRELUDE
    + r"""
local codes, values = {}, {}
for b = 2, #ARGV, 9 do
  local key, expected = ARGV[b], ARGV[b + 1]
  local old = redis.call('HGET', K_PAGES, key)
  local code, value = 1, ''
  if not old then
    code = 0
  elseif string.sub(old, 1, 2) == '2|' then
    code, value = -4, old
  elseif old ~= expected then
    code, value = -2, old
  elseif regresses(body_of(old), ARGV[b + 8]) then
    code, value = -5, old
  else
    local r = parse(old)
    local nr = {s = ARGV[b + 2], f = ARGV[b + 3], d = r.d, nd = ARGV[b + 4],
                ifs = ARGV[b + 5], pr = ARGV[b + 6], host = ARGV[b + 7], body = ARGV[b + 8]}
    unindex(key, r)
    value = build(nr)
    redis.call('HSET', K_PAGES, key, value)
    index(key, nr)
  end
  codes[#codes + 1] = code
  values[#values + 1] = value
end
return {codes, values}
"""
)

#: Compare-and-set of one hash field: a site record, or a meta record (trust, quiet
#: claims, the run cadence). ARGV: P, the hash (``sites``, ``meta:<namespace>``), the
#: field, the turn's name (a site's host, ``meta:<namespace>/<key>``), check (``?``:
#: write only if there is none; ``=`` followed by the stored value: write only if it is
#: still that value), the new value (empty: write nothing), turn claim (empty: none).
#: The turn is COMMIT's (``P:sturn:<turn name>``). Returns ``{code, value}``: 1
#: (written, or nothing to write and unchanged), -2 (changed since read), -3 (another
#: update has the turn); value is the field's value now ('' if none).
VALUE_CAS = (
    _SITE_TURN
    + r"""
local P, hash, field, turn = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local check, value, claim = ARGV[5], ARGV[6], ARGV[7]
local K = P .. ':' .. hash
local now_value = redis.call('HGET', K, field)
local code = site_turn(P, turn, check, claim, now_value)
if code == 1 then
  if value ~= '' then
    redis.call('HSET', K, field, value)
    now_value = value
  end
  local turn_key = P .. ':sturn:' .. turn
  if claim ~= '' and redis.call('GET', turn_key) == claim then redis.call('DEL', turn_key) end
end
return {code, now_value or ''}
"""
)
