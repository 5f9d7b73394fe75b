-- The soak's steady mixed load (bench/soak.ts), configured through the environment:
--   SOAK_APP_ID, SOAK_CLIENT_ID, SOAK_CLIENT_SECRET, SOAK_APP_KEY, SOAK_BASIC (the app's Basic header),
--   SOAK_TOKEN_SECONDS (lifetime of the tokens issued).
-- Out of every 20 requests: 2 token requests (1 in 25 of them for an admin token, the others
-- anonymous), 1 revocation of a token by itself, 17 whoami with one of the thread's newer tokens.
-- Each thread keeps 32 to 64 tokens; the oldest beyond 64 are dropped unrevoked and left to expire,
-- so the store sees tokens revoked, tokens expiring and housekeeping removing them.
-- At the end it prints one line: "SOAK_RESULT <json>".

local app_id = os.getenv("SOAK_APP_ID")
local client_id = os.getenv("SOAK_CLIENT_ID")
local client_secret = os.getenv("SOAK_CLIENT_SECRET")
local app_key = os.getenv("SOAK_APP_KEY")
local basic = os.getenv("SOAK_BASIC")
local lifetime = tonumber(os.getenv("SOAK_TOKEN_SECONDS") or "60")

local token_path = "/api/apps/" .. app_id .. "/oauth2/token"
local whoami_path = "/api/apps/" .. app_id .. "/whoami"
local revoke_path = "/api/apps/" .. app_id .. "/oauth2/revoke"

local MIN_TOKENS = 32
local MAX_TOKENS = 64

-- Per thread (each wrk thread has its own Lua state): live tokens as a FIFO.
local pool = {}
local head, tail = 1, 0
local sent = 0
issued, checked, revoked, dropped, failed = 0, 0, 0, 0, 0
statuses = {}
local threads = {}

function setup(thread)
  table.insert(threads, thread)
end

local function token_request(id, secret)
  local expires_at = string.format("%.0f", (os.time() + lifetime) * 1000)
  local body = '{"grant_type":"client_credentials","client_id":"' .. id .. '","client_secret":"' .. secret ..
    '","expiresAt":' .. expires_at .. '}'
  return wrk.format("POST", token_path, { ["Authorization"] = basic, ["Content-Type"] = "application/json" }, body)
end

function request()
  sent = sent + 1
  local live = tail - head + 1
  local slot = sent % 20
  if live < MIN_TOKENS or slot == 0 or slot == 10 then
    if sent % 50 == 0 then return token_request(client_id, client_secret) end
    return token_request(app_id, app_key)
  end
  if slot == 5 then
    local token = pool[head]
    pool[head] = nil
    head = head + 1
    return wrk.format("POST", revoke_path,
      { ["Authorization"] = "Bearer " .. token, ["Content-Type"] = "application/x-www-form-urlencoded" }, "token=" .. token)
  end
  -- One of the newer half: the revocations take the oldest, and a whoami still in flight on
  -- another connection when its token is revoked would be a 401 of the load's own making.
  local token = pool[tail - (sent % math.floor(live / 2))]
  return wrk.format("GET", whoami_path, { ["Authorization"] = "Bearer " .. token })
end

function response(status, response_headers, body)
  if status == 200 then
    local token = string.match(body, '"access_token":"([^"]+)"')
    if token then
      issued = issued + 1
      tail = tail + 1
      pool[tail] = token
      while tail - head + 1 > MAX_TOKENS do
        pool[head] = nil
        head = head + 1
        dropped = dropped + 1
      end
    elseif body == "" then
      revoked = revoked + 1
    else
      checked = checked + 1
    end
  else
    failed = failed + 1
    local key = tostring(status)
    statuses[key] = (statuses[key] or 0) + 1
  end
end

function done(summary, latency, requests)
  local totals = { issued = 0, checked = 0, revoked = 0, dropped = 0, failed = 0 }
  local by_status = {}
  for _, thread in ipairs(threads) do
    for name, _ in pairs(totals) do totals[name] = totals[name] + thread:get(name) end
    for status, count in pairs(thread:get("statuses")) do by_status[status] = (by_status[status] or 0) + count end
  end
  local status_parts = {}
  for status, count in pairs(by_status) do table.insert(status_parts, string.format('"%s":%d', status, count)) end
  local e = summary.errors
  io.write(string.format(
    'SOAK_RESULT {"requests":%d,"durationUs":%d,"errors":{"connect":%d,"read":%d,"write":%d,"status":%d,"timeout":%d},' ..
    '"latencyUs":{"p50":%d,"p90":%d,"p99":%d,"p999":%d,"mean":%.1f,"max":%d},' ..
    '"issued":%d,"checked":%d,"revoked":%d,"dropped":%d,"failed":%d,"failedByStatus":{%s}}\n',
    summary.requests, summary.duration, e.connect, e.read, e.write, e.status, e.timeout,
    latency:percentile(50), latency:percentile(90), latency:percentile(99), latency:percentile(99.9), latency.mean, latency.max,
    totals.issued, totals.checked, totals.revoked, totals.dropped, totals.failed, table.concat(status_parts, ",")))
end
