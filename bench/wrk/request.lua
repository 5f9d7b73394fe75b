-- The request of a benchmark case, from the environment (case.lua and tail.lua load it):
--   BENCH_METHOD, BENCH_PATH, BENCH_BODY, BENCH_CONTENT_TYPE, BENCH_AUTHORIZATION,
--   BENCH_HEADERS (more headers, one "Name: value" a line).
-- `request.format()` is the request, formatted by wrk (call it from `init`).

local request = {}

function request.format()
  local body = os.getenv("BENCH_BODY")
  local content_type = os.getenv("BENCH_CONTENT_TYPE")
  local authorization = os.getenv("BENCH_AUTHORIZATION")
  local headers = {}
  if content_type and content_type ~= "" then headers["Content-Type"] = content_type end
  if authorization and authorization ~= "" then headers["Authorization"] = authorization end
  for name, value in string.gmatch(os.getenv("BENCH_HEADERS") or "", "([^:\n]+): ([^\n]*)") do
    headers[name] = value
  end
  if body == "" then body = nil end
  return wrk.format(os.getenv("BENCH_METHOD") or "GET", os.getenv("BENCH_PATH") or "/", headers, body)
end

return request
