-- One benchmark case for wrk, configured through the environment:
--   BENCH_METHOD, BENCH_PATH, BENCH_BODY, BENCH_CONTENT_TYPE, BENCH_AUTHORIZATION,
--   BENCH_HEADERS (more headers, one "Name: value" a line),
--   BENCH_COLLECT_TOKENS=1 to keep every access_token answered (to check them afterwards).
-- At the end it prints one line: "BENCH_RESULT <json>".

local method = os.getenv("BENCH_METHOD") or "GET"
local path = os.getenv("BENCH_PATH") or "/"
local body = os.getenv("BENCH_BODY")
local content_type = os.getenv("BENCH_CONTENT_TYPE")
local authorization = os.getenv("BENCH_AUTHORIZATION")
local collect = os.getenv("BENCH_COLLECT_TOKENS") == "1"

local headers = {}
if content_type and content_type ~= "" then headers["Content-Type"] = content_type end
if authorization and authorization ~= "" then headers["Authorization"] = authorization end
for name, value in string.gmatch(os.getenv("BENCH_HEADERS") or "", "([^:\n]+): ([^\n]*)") do
  headers[name] = value
end
if body == "" then body = nil end

local prepared = nil
tokens = {}
count = 0
local threads = {}

function setup(thread)
  table.insert(threads, thread)
end

function init(args)
  prepared = wrk.format(method, path, headers, body)
end

function request()
  return prepared
end

if collect then
  function response(status, response_headers, response_body)
    if status == 200 then
      local token = string.match(response_body, '"access_token":"([^"]+)"')
      if token then
        count = count + 1
        tokens[count] = token
      end
    end
  end
end

function done(summary, latency, requests)
  local collected = {}
  if collect then
    for _, thread in ipairs(threads) do
      local list = thread:get("tokens")
      local n = thread:get("count")
      for i = 1, n do collected[#collected + 1] = list[i] end
    end
  end
  local file = os.getenv("BENCH_TOKENS_FILE")
  if collect and file then
    local out = io.open(file, "w")
    out:write(table.concat(collected, "\n"))
    out:close()
  end
  local e = summary.errors
  io.write(string.format(
    'BENCH_RESULT {"requests":%d,"durationUs":%d,"bytes":%d,"errors":{"connect":%d,"read":%d,"write":%d,"status":%d,"timeout":%d},' ..
    '"latencyUs":{"p10":%d,"p50":%d,"p90":%d,"p99":%d,"p999":%d,"mean":%.1f,"max":%d},"tokens":%d}\n',
    summary.requests, summary.duration, summary.bytes, e.connect, e.read, e.write, e.status, e.timeout,
    latency:percentile(10), latency:percentile(50), latency:percentile(90), latency:percentile(99), latency:percentile(99.9), latency.mean, latency.max,
    #collected))
end
